"""The planning budget (plan_night's budget_s): the cheap candidates run first, what the budget stops or leaves
unrun is named in budget_cut, the first timeline always runs whole, an event's MILP ends by the budget, and the
bound runs in what the budget leaves."""

from __future__ import annotations

import time

import pytest

from optsched.night import planner
from optsched.night.bound import BOUND_TIME_LIMIT_S, night_bound
from optsched.night.dispatch import DispatchPolicy
from optsched.night.improve import local_search
from optsched.night.milp import MIN_EVENT_TIME_LIMIT_S, MilpPolicy
from optsched.night.planner import (
    BOUND_BUDGET_SHARE,
    LARGE_NIGHT_BUDGET_S,
    NIGHT_BUDGET_S,
    SEARCH_NAME,
    SLOTTED_NAME,
    BudgetSpent,
    _Budgeted,
    night_budget_s,
)
from optsched.schema.errors import InvalidWorkload
from optsched.schema.night import BoundStatus
from tests.night.conftest import night_checked
from tests.support.factories import device, job, workload


def ten_jobs() -> dict:
    """Ten jobs with soft deadlines on two device types: every candidate, the slotted MILP and the search run."""
    devices = [device("a", "fast", 2, [(300.0, 2.0)]), device("b", "slow", 1, [(100.0, 1.0)])]
    jobs = [job(f"j{k}", work=0.5 + k % 3, p=0.9, max_devices=2, deadline_hours=2.0 + k % 4) for k in range(10)]
    return workload(devices, jobs)


def test_a_budget_spent_by_the_first_timeline_keeps_it_and_names_every_other():
    queue = ten_jobs()
    whole = night_checked(queue)
    assert whole.budget_cut == ()
    ran = {"milp", "milp-soft", "milp-classic", "fifo", "edf", "easy", "conservative"}
    cut = night_checked(queue, budget_s=1e-6)
    # The first in the running order (the cheap ones first) is the first dispatch; nothing else runs.
    assert cut.chosen == "dispatch-priority"
    assert set(cut.budget_cut) >= ran | {SLOTTED_NAME, SEARCH_NAME} and "dispatch-priority" not in cut.budget_cut
    assert len(cut.budget_cut) == len(set(cut.budget_cut))
    # The budget is also stated on the plan the CLI and the service return: the timeline is whole and checked.
    assert cut.summary.jobs == 10 and cut.summary.never_ran == ()


def test_the_bound_gets_what_the_budget_leaves(monkeypatch):
    limits = []

    def spy(*args, **kwargs):
        limits.append(kwargs["time_limit_s"])
        return night_bound(*args, **kwargs)

    monkeypatch.setattr(planner, "night_bound", spy)
    queue = ten_jobs()
    spent = night_checked(queue, budget_s=1e-6)
    # The first timeline ran past the budget: the bound gets half the share kept for it, and stops at once.
    assert limits == [pytest.approx(BOUND_BUDGET_SHARE * 1e-6 / 2)]
    bound = spent.summary.bound
    assert bound.status is BoundStatus.skipped and "stopped before its optimum" in bound.reason
    roomy = night_checked(queue, budget_s=600)
    assert limits[1] == BOUND_TIME_LIMIT_S and roomy.summary.bound.status is BoundStatus.bound


def test_a_budget_that_does_not_bind_changes_nothing():
    queue = ten_jobs()
    assert night_checked(queue, budget_s=600).model_dump() == night_checked(queue).model_dump()


@pytest.mark.parametrize("value", [0, -1, True, "20", 86_401, float("nan")])
def test_a_budget_out_of_range_is_refused_by_name(value):
    with pytest.raises(InvalidWorkload) as caught:
        night_checked(ten_jobs(), budget_s=value)
    assert [e.path for e in caught.value.errors] == ["budget_s"]


def test_the_default_budget_follows_the_queue_size():
    assert night_budget_s(120) == NIGHT_BUDGET_S and night_budget_s(500) == LARGE_NIGHT_BUDGET_S
    assert NIGHT_BUDGET_S <= 20 and LARGE_NIGHT_BUDGET_S <= 120  # issue 28: 120 jobs in 20 s, 500 in 2 min


def test_a_timeline_stops_at_its_first_event_past_the_deadline():
    policy = DispatchPolicy("dispatch-priority", order="priority")
    late = _Budgeted(policy, time.monotonic() - 1.0)
    assert late.name == "dispatch-priority"
    with pytest.raises(BudgetSpent):
        late.decide(None)  # type: ignore[arg-type]  # it stops before looking at the view


def test_an_event_solve_ends_by_the_budget():
    free = MilpPolicy(time_limit_s=10.0, mip_gap=0.01)
    assert free._time_limit_s() == 10.0
    later = MilpPolicy(time_limit_s=10.0, mip_gap=0.01, deadline=time.monotonic() + 3_600)
    assert later._time_limit_s() == 10.0
    soon = MilpPolicy(time_limit_s=10.0, mip_gap=0.01, deadline=time.monotonic() + 2.0)
    assert 1.0 < soon._time_limit_s() <= 2.0
    past = MilpPolicy(time_limit_s=10.0, mip_gap=0.01, deadline=time.monotonic() - 5.0)
    assert past._time_limit_s() == MIN_EVENT_TIME_LIMIT_S


def test_the_search_stops_when_asked_and_keeps_its_best():
    calls = []

    def evaluate(order):
        calls.append(order)
        return (sum(a > b for k, a in enumerate(order) for b in order[k + 1 :]),), None

    asked = iter([False, False, True])
    key, _, tried = local_search((3, 2, 1, 0), evaluate, evaluations=1_000, stop=lambda: next(asked))
    assert tried == 3 == len(calls)  # the seed and two moves, then stopped
    assert key == min(evaluate(o)[0] for o in calls[:3])

