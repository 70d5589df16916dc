"""models/workloads/night-queue.json is what the issue asks for, and the baselines' timelines on it verify.

The planner on the whole queue takes several seconds; bench/night.py measures it (bench/results/night.md).
"""

from __future__ import annotations

from optsched.schema.catalog import sample_workload_path
from optsched.schema.night import NightQueue
from optsched.schema.workload import Priority
from tests.night.conftest import night_checked

QUEUE = NightQueue.load(str(sample_workload_path("night-queue")))


def chain_length(queue: NightQueue, job_id: str) -> int:
    by_id = {j.id: j for j in queue.jobs}
    return 1 + max((chain_length(queue, p) for p in by_id[job_id].after), default=0)


def test_the_queue_has_what_the_issue_asks_for():
    assert len(QUEUE.jobs) >= 60
    assert len({d.model for d in QUEUE.devices}) == 4 and len({d.domain for d in QUEUE.devices}) == 2
    assert {j.priority for j in QUEUE.jobs} == set(Priority)
    assert QUEUE.power.windows and any(w.budget_w < QUEUE.power.budget_w for w in QUEUE.power.windows)
    assert sum(1 for j in QUEUE.jobs if chain_length(QUEUE, j.id) >= 3) >= 4


def test_fifo_and_edf_timelines_verify_and_the_evening_window_binds():
    evening = min(QUEUE.power.windows, key=lambda w: w.budget_w)
    for policy in ("fifo", "edf"):
        plan = night_checked(QUEUE, policy)
        drawn = max(e.power_w for e in plan.events if evening.from_hours <= e.at_hours < evening.to_hours)
        assert drawn >= 0.95 * evening.budget_w
        assert plan.summary.hard_deadlines_missed  # the naive rules miss hard deadlines the planner meets
