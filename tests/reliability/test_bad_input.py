"""Promise 1 (Python API, CLI, REST API): a broken workload is rejected clearly, never with a crash.

Hypothesis takes tiny valid workloads and changes one value: a wrong type, NaN or infinity, a negative or
huge number, a list of 10^5-10^6 items, nesting 40 to 100,000 deep, an unknown field, a unicode id, a
duplicate id, a missing field. Each goes through `optsched.plan`, `optsched plan` and POST /v1/plans (see
tests/support/interfaces.py for what each must do). The API side of the promise is also fuzzed from the
OpenAPI document in test_fuzz_api.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings

from api import create_app, shutdown
from tests.support.interfaces import TRACEBACK, check_everywhere
from tests.support.mutations import MUTATIONS, mutants

pytestmark = pytest.mark.slow  # real servers and solver processes, at CI's budgets

EXAMPLES = int(os.environ.get("OPTSCHED_MUTATION_EXAMPLES", "200"))
OPTSCHED = Path(sys.executable).with_name("optsched")


@pytest.fixture(scope="module")
def api_client(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mutations")
    app = create_app(
        {"DATABASE_URL": f"sqlite:///{folder}/plans.db", "START_WORKERS": False, "SYNC_WAIT_S": 0,
         "QUEUE_SIZE": 10_000_000, "API_TOKEN": None, "AUTH": "off"}
    )
    yield app.test_client()
    shutdown(app)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("cli")


@given(mutant=mutants())
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)
def test_every_mutation_is_rejected_with_its_path_or_planned_feasibly_everywhere(mutant, api_client, folder):
    outcome = check_everywhere(mutant, api_client, folder)
    event(f"{mutant.kind}: {outcome}")


@pytest.mark.parametrize("kind", sorted(MUTATIONS))
def test_each_kind_of_mutation_is_tried(kind, api_client, folder):
    """Every kind at least once, whatever the random draw above picked."""

    @given(mutant=mutants(kinds=(kind,)))
    @settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    def one_kind(mutant):
        check_everywhere(mutant, api_client, folder)

    one_kind()


@pytest.mark.parametrize(
    "text, why",
    [
        ('{"devices": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
        ('{"devices": [], "jobs": [' + ",".join(["1"] * 1_000_000) + "]}", "1,000,000 items"),
        ('{"devices": NaN}', "NaN is not a number JSON allows"),
        (b"\xff\xfe{}", "cannot read"),
    ],
    ids=["deep", "million", "nan", "not-utf8"],
)
def test_the_real_cli_exits_2_without_a_traceback(tmp_path, text, why):
    path = tmp_path / "w.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    run = subprocess.run([str(OPTSCHED), "plan", str(path)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr[-2000:]
    assert TRACEBACK not in run.stderr and run.stdout == ""
    assert why in run.stderr, run.stderr[-2000:]
