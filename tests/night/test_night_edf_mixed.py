"""The dispatch's EDF order over soft and hard deadlines together (`edf-mixed`), and the static orders whose ranked
replay is their policy's night (`DispatchPolicy.static_order`, where the deadline repair starts from)."""

from __future__ import annotations

from hypothesis import given, settings

from optsched.night.dispatch import STATIC_ORDERS, DispatchPolicy
from optsched.night.engine import simulate
from optsched.night.fleet import Fleet
from optsched.night.improve import ranks
from optsched.night.milp import validate_night
from optsched.night.planner import CANDIDATE_NAMES
from optsched.verify.timeline import verify_timeline
from tests.night.conftest import START, night_checked
from tests.night.night_factories import night_queues
from tests.support.factories import device, job, workload


def soft_before_hard() -> dict:
    """One device of speed 1: H (high, hard, due at 4 h) and S (normal, soft, due at 1.5 h), 1 h of work each.
    Hard before soft runs H 0-1 h and S 1-2 h, late; by deadline alone S runs first and both are in time."""
    return workload(
        [device("g", "m", 1, [(100, 1.0)])],
        [
            job("H", work=1, p=1.0, priority="high", deadline_hours=4.0),
            job("S", work=1, p=1.0, deadline_hours=1.5),
        ],
    )


def test_edf_mixed_runs_an_earlier_soft_deadline_before_a_later_hard_one():
    hard_first = night_checked(soft_before_hard(), candidates=("dispatch-edf",))
    mixed = night_checked(soft_before_hard(), candidates=("dispatch-edf-mixed",))

    assert {j.job: (j.start_hours, j.finish_hours) for j in hard_first.jobs} == {"H": (0.0, 1.0), "S": (1.0, 2.0)}
    assert hard_first.summary.soft_deadlines_missed == ("S",)
    assert {j.job: (j.start_hours, j.finish_hours) for j in mixed.jobs} == {"H": (1.0, 2.0), "S": (0.0, 1.0)}
    assert mixed.summary.soft_deadlines_missed == () and mixed.summary.hard_deadlines_missed == ()


def test_the_planner_runs_both_edf_mixed_candidates():
    assert {"dispatch-edf-mixed", "dispatch-edf-mixed-efficient"} <= set(CANDIDATE_NAMES)
    plan = night_checked(soft_before_hard())
    assert plan.summary.soft_deadlines_missed == ()


def urgent_behind_a_running_job() -> dict:
    """Two devices of speed 1. A (normal, 0.7 h on one device) starts at 0; B (high, so hard; due at 1.8 h; 1.8 h of
    work, not elastic) is released at 0.5 h with one device free, and is urgent at once (slack 1.8 - 0.5 - 0.9 =
    0.4 h). Started there it ends at 2.3 h; waiting for A's device it starts at 0.7 h on two and ends at 1.6 h."""
    return workload(
        [device("g", "m", 2, [(100, 1.0)])],
        [
            job("A", work=0.7, p=1.0, max_devices=1),
            job("B", work=1.8, p=1.0, priority="high", deadline_hours=1.8, release_hours=0.5, elastic=False),
        ],
    )


def test_an_urgent_job_waits_for_devices_only_where_its_policy_lets_it():
    eager = night_checked(urgent_behind_a_running_job(), candidates=("dispatch-edf-mixed",))
    patient = night_checked(urgent_behind_a_running_job(), candidates=("dispatch-edf-mixed-patient",))

    b = {j.job: j for j in eager.jobs}["B"]
    assert (b.start_hours, b.finish_hours) == (0.5, 2.3)
    assert eager.summary.hard_deadlines_missed == ("B",)
    b = {j.job: j for j in patient.jobs}["B"]
    assert (b.start_hours, b.finish_hours) == (0.7, 1.6)
    assert patient.summary.hard_deadlines_missed == ()


def test_the_planner_runs_the_edf_mixed_variants():
    variants = {"aware", "efficient-aware", "patient", "efficient-patient"}
    assert {f"dispatch-edf-mixed-{v}" for v in variants} <= set(CANDIDATE_NAMES)
    plan = night_checked(urgent_behind_a_running_job())
    assert plan.summary.hard_deadlines_missed == ()


def test_an_order_that_changes_with_time_has_no_static_order():
    fleet = Fleet(validate_night(soft_before_hard(), start=START, hours=8.0)[0])
    assert DispatchPolicy("p", order="hybrid-soft").static_order(fleet) is None
    assert DispatchPolicy("p", order="edf-mixed").static_order(fleet) == (1, 0)
    assert DispatchPolicy("p", order="deadline").static_order(fleet) == (0, 1)


@settings(max_examples=40, deadline=None)
@given(night_queues(max_jobs=6))
def test_a_static_order_replayed_by_rank_is_its_policys_night(doc):
    doc.pop("failures", None)  # a failure cuts a job short and changes its key (work left) from then on
    queue, begin = validate_night(doc, start=START, hours=8.0)
    fleet = Fleet(queue)
    for order in STATIC_ORDERS:
        for sizing, aware, waits in (("most", True, False), ("efficient", False, False), ("most", False, True)):
            policy = DispatchPolicy("p", order=order, sizing=sizing, completion_aware=aware, urgent_waits=waits)
            replay = DispatchPolicy(
                "r", order="ranked", rank=ranks(policy.static_order(fleet)), sizing=sizing, completion_aware=aware,
                urgent_waits=waits,
            )
            nights = [simulate(queue, p, start=begin, hours=8.0, restart_hours=0.1) for p in (policy, replay)]
            for night in nights:
                assert verify_timeline(queue, night) == []
            own, replayed = ([(j.job, j.start_hours, j.finish_hours, j.segments) for j in n.jobs] for n in nights)
            assert own == replayed, (order, sizing, aware, waits)
