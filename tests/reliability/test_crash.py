"""Promise 4: nothing is lost under crashes (the scenario is in tests/support/crash.py).

50 workloads, the server SIGKILLed (whole process group) 4 times: once while a plan is solving, once at a
random moment, twice from inside at a random database commit or write; restarted on the same SQLite file each
time. `python -m bench.reliability crash` runs more kills and records the figure.
"""

from __future__ import annotations

import os

import pytest

from tests.support.crash import run_crash_scenario

pytestmark = pytest.mark.slow  # real servers and solver processes, at CI's budgets

KILLS = int(os.environ.get("OPTSCHED_CRASH_KILLS", "4"))


def test_every_accepted_workload_ends_with_a_verified_plan_after_repeated_sigkills(tmp_path):
    report = run_crash_scenario(tmp_path / "crash", workloads=50, kills=KILLS, seed=6)
    assert report.kills == KILLS
    assert report.failpoint_kills >= 1, report  # at least one kill landed inside a database write
    assert report.requeued_at_restart >= 1, report  # and recovery had plans to requeue
    assert report.accepted == 50, report
    assert report.unverified == [], report
    assert set(report.statuses) <= {"optimal", "time_limit"}, report.statuses
    assert report.rows == 50, report  # one row per workload: no retry made a duplicate
    assert report.integrity == "ok"
