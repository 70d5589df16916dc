"""Random small queues: every timeline (planner, FIFO, EDF) verifies; the planner is deterministic, runs what can
run."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from optsched.night import NightStatus
from tests.night.conftest import night_checked
from tests.night.night_factories import night_queues


@pytest.mark.slow
@settings(max_examples=25)
@given(night_queues())
def test_every_planner_timeline_verifies_and_is_deterministic(queue):
    plan = night_checked(queue)
    assert night_checked(queue) == plan
    assert (plan.status == NightStatus.met) == (not plan.summary.hard_deadlines_missed and not plan.summary.never_ran)
    for timeline in plan.jobs:
        if timeline.finish_hours is None:
            assert timeline.reason.startswith("never ran: ")
            assert "no decision found room" not in timeline.reason


@settings(max_examples=40)
@given(night_queues(), night_queues())
def test_every_baseline_timeline_verifies(first, second):
    for queue in (first, second):
        night_checked(queue, "fifo")
        night_checked(queue, "edf")
        night_checked(queue, "easy")
        night_checked(queue, "conservative")


@settings(max_examples=15)
@given(night_queues(max_jobs=4))
def test_preemptive_timelines_verify(queue):
    night_checked(queue, preempt=True, restart_hours=0.25)


@pytest.mark.slow
@settings(max_examples=15)
@given(night_queues(max_jobs=4))
def test_timelines_that_wait_for_repairs_verify(queue):
    night_checked(queue, on_failure="wait")
