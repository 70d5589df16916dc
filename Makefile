# Fresh clone: `make plan` runs the main job, `make test` runs the suite; both install into .venv first.
# `make clean` removes what the targets make: .venv, caches, build/ (docs), plans/ (night), var/ (the SQLite store of serve).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

SYSTEM_STAMP := $(VENV)/.system-packages

.PHONY: install system-packages plan serve night test test-fast test-durations test-busy architecture lint docs bench bench-large clean config-reference

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

plan: install
	$(BIN)/optsched plan models/workloads/demo.json --table

# On 127.0.0.1 only; without OPTSCHED_API_TOKEN(S) or OPTSCHED_AUTH it runs with OPTSCHED_AUTH=off (logged at start).
serve: install
	$(if $(OPTSCHED_API_TOKEN)$(OPTSCHED_API_TOKENS)$(OPTSCHED_AUTH),,OPTSCHED_AUTH=off) $(BIN)/optsched serve

night: install
	$(BIN)/optsched night models/workloads/night-queue.json --start 2026-12-01T22:00 --hours 8 --out plans/demo

# Debian packages the tests use (Chromium, Redis, Slurm, munge, jq): installed where missing, checked once per venv.
system-packages: $(SYSTEM_STAMP)

$(SYSTEM_STAMP): .ci/system-packages | $(STAMP)
	bash .ci/system-packages
	touch $(SYSTEM_STAMP)

# Two test processes (pytest-xdist); the tests of tests/conftest.py's SERIAL folders run one after another in one
# of them: they start worker pools, Redis and Slurm and time their leases. The schemathesis tests share one node id
# per operation, which xdist's grouped scheduling runs once only: they run after, in one process.
SHARED_IDS := tests/reliability/test_fuzz_api.py
# OPTSCHED_NO_SKIPS=1: a skipped test fails here (tests/conftest.py), as every service and package it needs is
# installed or running for `make test`.
test: install system-packages architecture lint docs
	OPTSCHED_NO_SKIPS=1 $(BIN)/python -m pytest -q -n 2 --dist loadgroup --ignore=$(SHARED_IDS)
	OPTSCHED_NO_SKIPS=1 $(BIN)/python -m pytest -q $(SHARED_IDS)

# The inner loop: everything but the tests marked slow (@pytest.mark.slow: over about a second, real servers, worker
# processes, the browser): 660 tests in 98 s on 2 cores at load 1 (measured on 2026-12-07, each under 2 s).
test-fast: install architecture lint
	$(BIN)/python -m pytest -q -m "not slow"

# The fast tier's rule checked: fails, naming them, when tests not marked slow take over 2 s (tests/support/durations.py).
test-durations: install
	$(BIN)/python -m pytest -q -m "not slow" --fast-limit-s=2

# The suite keeps its word on a busy machine: the fast tier, then the tests that assert on wall time, each beside two
# CPU-bound processes (tests/support/busy.py; bounds in tests/support/timing.py).
TIME_SENSITIVE := tests/test_time_limit.py tests/test_columns.py tests/test_large.py tests/api/test_api_verify_health.py \
	tests/hardening tests/reliability/test_limits.py tests/reliability/test_load_memory.py
test-busy: install architecture
	$(BIN)/python -m tests.support.busy -q -m "not slow"
	$(BIN)/python -m tests.support.busy -q $(TIME_SENSITIVE)

# The import graph: no cycles, arrows only down the layers (tests/support/architecture.py).
architecture: install
	$(BIN)/python -m tests.support.architecture

# The gates: ruff (pyproject.toml [tool.ruff]) over the repository and mypy over optsched and api, both at zero
# findings; strict on optsched.schema, optsched.model and optsched.verify ([tool.mypy] and its overrides).
lint: install
	$(BIN)/ruff check .
	$(BIN)/mypy

# The docs site (mkdocs.yml): --strict turns every warning, a broken link among them, into a failure.
docs: install
	$(BIN)/mkdocs build --strict --site-dir build/site

bench: install
	$(BIN)/python -m bench.planner

bench-large: install
	$(BIN)/python -m bench.large \
		--runs racks:2K:60:2,racks:5K:60:2,racks:10K:60:1,racks:20K:60:1,racks3:2K:60:2,racks3:5K:60:1,plain:XL:60:1,mixed:2K:60:2 \
		--undecomposed racks:2K:60:1 \
		--parts racks:2K:60:2,racks:5K:60:2,racks:10K:60:1,racks3:2K:60:2,racks3:5K:60:1,plain:XL:60:1,mixed:2K:60:2 \
		--baseline-max-jobs 2000 --out bench/results/planner-large.md

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .grimp_cache build plans var

# The configuration reference, generated from optsched/service/settings.py (tests/test_settings_reference.py checks it).
config-reference: install
	$(BIN)/python -m optsched.service.settings_reference docs/operations/configuration.md
