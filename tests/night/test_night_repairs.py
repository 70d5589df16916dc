"""Jobs stopped by a device failure: a job that waits for the repair resumes only at caps whose draw fits every
budget until it ends; a job that never runs again is reported as stopped, and the verifier accepts that honest
timeline while it still catches a real inconsistency."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optsched.night import NightStatus
from optsched.verify.timeline import verify_timeline
from tests.night.conftest import night_checked
from tests.night.night_factories import night_queues
from tests.support.factories import device, job, workload


def lower_window_queue() -> dict:
    """Two 100 W devices (speed 1; a 50 W cap at speed 0.5). A (4 h of work, p = 1) may use both. Device 0 fails
    at 1 h for 1 h (checkpoints every hour: nothing lost). From 2.5 h a window allows 60 W: one device at 50 W.

    Waiting for the repair, A resumes at 2 h with 3 h of work left; on both devices at 100 W it would run into the
    window at 200 W, on both at 50 W at 100 W: either is over 60 W, so it must resume on its own devices at caps
    that fit until it ends, or wait."""
    return workload(
        [device("g", "m", 2, [(100, 1.0), (50, 0.5)])],
        [job("A", work=4, p=1.0, max_devices=2)],
        power={"windows": [{"from_hours": 2.5, "to_hours": 8, "budget_w": 60}]},
        failures=[{"device": "g", "count": 1, "at_hours": 1.0, "repair_hours": 1}],
        defaults={"checkpoint_hours": 1.0},
    )


def test_a_job_waiting_for_a_repair_does_not_resume_over_a_later_window_budget():
    plan = night_checked(lower_window_queue(), on_failure="wait")
    for event in plan.events:
        if event.budget_w is not None:
            assert event.power_w <= event.budget_w + 1e-9, (event.at_hours, event.power_w, event.budget_w)


def short_window_queue() -> dict:
    """One 100 W device (speed 1); A (2.5 h of work) may draw 100 W only in the window 0-3 h (50 W after). The
    device fails at 2 h for 0.2 h; checkpoints every 1.5 h, so the 0.5 h since the last is lost and 1 h of work is
    left: with its 0.1 h restart that is 1.1 h, longer than what is left of the window, so A never runs again."""
    return workload(
        [device("g", "m", 1, [(100, 1.0)])],
        [job("A", work=2.5, p=1.0)],
        power={"budget_w": 50, "windows": [{"from_hours": 0, "to_hours": 3, "budget_w": 100}]},
        failures=[{"device": "g", "count": 1, "at_hours": 2.0, "repair_hours": 0.2}],
        defaults={"checkpoint_hours": 1.5, "restart_hours": 0.1},
    )


@pytest.mark.parametrize(("policy", "on_failure"), [("planner", "replan"), ("planner", "wait"), ("fifo", None)])
def test_a_job_a_failure_stopped_for_good_is_reported_stopped(policy, on_failure):
    kwargs = {} if on_failure is None else {"on_failure": on_failure}
    plan = night_checked(short_window_queue(), policy, **kwargs)
    a = plan.jobs[0]
    assert a.finish_hours is None and a.start_hours == 0.0 and a.segments[-1].to_hours == pytest.approx(2.0)
    assert a.lost_work_hours == pytest.approx(0.5)
    assert a.reason.startswith("stopped: a device failure at 2 h stopped it with 1 of its 2.5 reference hours left")
    assert "shorter than its fastest run (1.1 h)" in a.reason
    assert plan.summary.stopped == ("A",) and plan.summary.never_ran == ("A",)
    assert plan.status == NightStatus.missed


def test_the_verifier_still_catches_an_unfinished_job_no_failure_stopped():
    queue = short_window_queue()
    plan = night_checked(queue)
    without_failure = {**queue, "failures": []}
    problems = verify_timeline(without_failure, plan)
    assert any("has segments but no finish, and no failure of its devices stopped its last one" in p for p in problems)
    assert any("summary: stopped is ['A']" in p for p in problems)


def test_the_verifier_catches_a_stopped_job_that_did_all_its_work():
    queue = short_window_queue()
    queue["jobs"] = [{**queue["jobs"][0], "work_hours": 1.5}]
    plan = night_checked(short_window_queue())
    a = plan.jobs[0]
    done = a.model_copy(update={"work_hours": 1.5})
    problems = verify_timeline(queue, plan.model_copy(update={"jobs": (done,)}))
    assert any("reported stopped, but its segments do all its 1.5 h of work" in p for p in problems)


@pytest.mark.slow
@settings(max_examples=30, deadline=None)
@given(night_queues(max_jobs=4).filter(lambda q: "failures" in q and q["power"].get("windows")), st.booleans())
def test_random_failures_under_power_windows_verify(queue, wait):
    plan = night_checked(queue, on_failure="wait" if wait else "replan")
    for t in plan.jobs:
        if t.finish_hours is None and t.segments:
            assert t.reason.startswith("stopped: ") and t.job in plan.summary.stopped
