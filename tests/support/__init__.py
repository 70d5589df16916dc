"""The test harness: servers, fault tools, hypothesis strategies, the import-graph check. Not installed: needs the
`dev` extra. tests/ and bench/ import it; nothing under optsched/ or api/ does."""
