"""Device catalogs and sample workloads shipped as data (installed as optsched.catalog)."""
