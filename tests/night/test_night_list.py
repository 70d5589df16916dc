"""The greedy list candidates (`list-deadline`, `list-edf-mixed`): the list schedulers' rule in the dispatch's
orders over effective deadlines, which of the planner's nights run them, and their timelines through the verifier."""

from __future__ import annotations

from hypothesis import given, settings

from optsched.baselines.night import ListPolicy
from optsched.night.milp import NIGHT_MIP_GAP, NIGHT_TIME_LIMIT_S, validate_night
from optsched.night.planner import CANDIDATE_NAMES, EFFICIENT_MAX_JOBS, LIST_ORDERS, candidate_policies
from tests.night.conftest import START, night_checked
from tests.night.night_factories import night_queues
from tests.support.factories import device, job, workload

LIST_NAMES = tuple(f"list-{order}" for order in LIST_ORDERS)


def chain_behind_a_soft_deadline() -> dict:
    """One device of speed 1, 1 h of work each: C (soft, due at 3 h), A (no deadline), B after A (soft, due at
    2.5 h). By its own deadline (the EDF list scheduler) C runs first and B ends at 3 h, late; by effective deadline
    A (due at 1.5 h for B to make it) runs first, then B, then C, and every deadline holds."""
    return workload(
        [device("g", "m", 1, [(100, 1.0)])],
        [
            job("C", work=1, p=1.0, deadline_hours=3.0),
            job("A", work=1, p=1.0),
            job("B", work=1, p=1.0, deadline_hours=2.5, after=["A"]),
        ],
    )


def test_the_list_candidates_take_effective_deadlines_where_the_edf_list_scheduler_does_not():
    edf = night_checked(chain_behind_a_soft_deadline(), "edf")
    assert edf.summary.soft_deadlines_missed == ("B",)
    for name in LIST_NAMES:
        plan = night_checked(chain_behind_a_soft_deadline(), candidates=(name,))
        assert plan.chosen == name
        assert [(j.job, j.start_hours) for j in sorted(plan.jobs, key=lambda j: j.start_hours or 0.0)] == [
            ("A", 0.0),
            ("B", 1.0),
            ("C", 2.0),
        ]
        assert plan.summary.soft_deadlines_missed == ()


def list_names(jobs: int) -> list[str]:
    night_queue, _ = validate_night(
        workload([device("g", "m", 4, [(100, 1.0)])], [job(f"j{i}", work=0.5) for i in range(jobs)]),
        start=START,
        hours=8.0,
    )
    policies = candidate_policies(night_queue, hours=8.0, time_limit_s=NIGHT_TIME_LIMIT_S, mip_gap=NIGHT_MIP_GAP)
    return [p.name for p in policies if isinstance(p, ListPolicy)]


def test_the_list_candidates_run_up_to_the_reference_size_only():
    assert set(LIST_NAMES) <= set(CANDIDATE_NAMES)
    assert list_names(EFFICIENT_MAX_JOBS) == list(LIST_NAMES)
    assert list_names(EFFICIENT_MAX_JOBS + 1) == []


@settings(max_examples=25, deadline=None)
@given(night_queues(max_jobs=6))
def test_the_list_candidates_nights_are_verified(queue):
    plan = night_checked(queue, candidates=LIST_NAMES)
    assert plan.chosen in LIST_NAMES
