"""Device failures: a job on a failed device loses the work since its last checkpoint, restarts (a segment),
and is re-planned at once or waits for the repair; the verifier recomputes the lost work."""

from __future__ import annotations

import pytest

from optsched.verify.timeline import verify_timeline
from tests.night.conftest import night_checked
from tests.support.factories import device, job, workload


def failure_queue(**defaults) -> dict:
    """One 2-device group (100 W, speed 1); A (4 h of work, p = 1) runs on both from 0 h at S = 2.

    Device 0 fails at 1.5 h for 2 h. Checkpoints every hour: the last one was at 1 h, so the 0.5 h since
    (1 h of work at S = 2) is lost and 4 - 3 + 1 = 2 h of work are left."""
    return workload(
        [device("g", "m", 2, [(100, 1.0)])],
        [job("A", work=4, p=1.0, max_devices=2)],
        failures=[{"device": "g", "count": 1, "at_hours": 1.5, "repair_hours": 2}],
        defaults={"checkpoint_hours": 1.0, **defaults},
    )


def spans(plan, name):
    timeline = next(j for j in plan.jobs if j.job == name)
    return [
        (s.from_hours, pytest.approx(s.to_hours), s.restart, pytest.approx(s.work_hours), s.rolled_back_hours,
         tuple(i for a in s.allocations for i in a.devices))
        for s in timeline.segments
    ]


def test_replanned_at_the_failure_the_job_restarts_on_the_surviving_device():
    """Restarting now on device 1 (0.1 h restart, then 2 h at S = 1) ends at 3.6 h; waiting for the repair would
    end at 3.5 + 0.1 + 1 = 4.6 h."""
    plan = night_checked(failure_queue(), restart_hours=0.1)
    assert spans(plan, "A") == [
        (0.0, 1.5, False, 3.0, pytest.approx(1.0), (0, 1)),
        (1.5, 1.6, True, 0.0, 0.0, (1,)),
        (pytest.approx(1.6), 3.6, False, 2.0, 0.0, (1,)),
    ]
    a = plan.jobs[0]
    assert a.restarts == 1 and a.lost_work_hours == pytest.approx(1.0)
    failed = next(e for e in plan.events if e.at_hours == 1.5)
    assert failed.failed == ("A",) and failed.down == {"g": (0,)} and failed.started == ("A",)
    assert plan.summary.lost_work_hours == pytest.approx(1.0) and plan.summary.makespan_hours == pytest.approx(3.6)


def test_waiting_for_the_repair_resumes_on_the_same_devices():
    plan = night_checked(failure_queue(), restart_hours=0.1, on_failure="wait")
    assert spans(plan, "A") == [
        (0.0, 1.5, False, 3.0, pytest.approx(1.0), (0, 1)),
        (3.5, 3.6, True, 0.0, 0.0, (0, 1)),
        (pytest.approx(3.6), 4.6, False, 2.0, 0.0, (0, 1)),
    ]
    assert plan.on_failure == "wait" and plan.summary.makespan_hours == pytest.approx(4.6)


def test_a_failure_right_after_a_checkpoint_loses_nothing_and_job_restart_costs_apply():
    q = failure_queue()
    q["failures"][0]["at_hours"] = 1.0
    q["jobs"][0]["restart_hours"] = 0.25
    plan = night_checked(q)
    first, restart = plan.jobs[0].segments[:2]
    assert (
        first.rolled_back_hours == 0.0
        and restart.restart
        and restart.to_hours - restart.from_hours == pytest.approx(0.25)
    )


@pytest.mark.parametrize("policy", ["fifo", "edf", "easy"])
def test_baselines_re_plan_failed_jobs_and_verify(policy):
    plan = night_checked(failure_queue(), policy)
    assert plan.jobs[0].lost_work_hours == pytest.approx(1.0) and plan.jobs[0].finish_hours is not None


def test_the_verifier_recomputes_lost_work_and_sees_down_devices():
    queue = failure_queue()
    document = night_checked(queue, restart_hours=0.1).model_dump(mode="json")
    document["jobs"][0]["segments"][0]["rolled_back_hours"] = 0.5
    problems = verify_timeline(queue, document)
    assert any("rolls back 0.5 h, the work since its last checkpoint (at 1 h) is 1 h" in p for p in problems)
    document = night_checked(queue, restart_hours=0.1).model_dump(mode="json")
    for seg in document["jobs"][0]["segments"][1:]:
        seg["allocations"][0]["devices"] = [0]
    problems = verify_timeline(queue, document)
    assert any("uses 'g'[0] while it is down (1.5-3.5 h)" in p for p in problems)


@pytest.mark.parametrize("policy", ["planner", "fifo", "edf", "easy"])
def test_a_job_that_completes_at_the_instant_its_device_fails_keeps_its_result(policy):
    # A finishes at 2 h (4 h of work at S = 2); the failure lands at the same instant, 0.5 h after a checkpoint.
    q = failure_queue(checkpoint_hours=0.75)
    q["failures"][0]["at_hours"] = 2.0
    plan = night_checked(q, policy)
    timeline = plan.jobs[0]
    assert timeline.finish_hours == pytest.approx(2.0)
    assert [s.rolled_back_hours for s in timeline.segments] == [0.0] and timeline.lost_work_hours == 0.0
