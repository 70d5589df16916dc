"""The dispatch's and the list schedulers' search for a start skips the device counts whose draw cannot fit now
(optsched.night.fleet.most_that_fit): the timelines are the same as when every count is tried."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optsched.baselines import night as baselines
from optsched.night import dispatch
from optsched.night.fleet import most_that_fit
from optsched.night.planner import DISPATCH_ORDERS
from tests.night.conftest import night_checked
from tests.night.night_factories import night_queues
from tests.support.factories import device, job, workload

DISPATCH = (*(f"dispatch-{order}" for order in DISPATCH_ORDERS), "dispatch-efficient", "dispatch-edf-efficient")
LIST = ("fifo", "edf", "easy", "conservative")


def every_count(fewest: int, most: int, fits) -> int:
    return most


def timelines(queue) -> list[tuple]:
    plans = [night_checked(queue, candidates=(name,)) for name in DISPATCH]
    plans += [night_checked(queue, policy) for policy in LIST]
    return [tuple((j.job, j.start_hours, j.finish_hours, j.segments) for j in p.jobs) for p in plans]


def same_as_every_count_tried(queue) -> None:
    skipped = timelines(queue)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(dispatch, "most_that_fit", every_count)
        m.setattr(baselines, "most_that_fit", every_count)
        tried = timelines(queue)
    assert skipped == tried


def wide_tight_queue() -> dict:
    """Twelve fast and eight slow devices under a budget for about half of them at the top cap, a window lowering
    it further; jobs that would take every device: each start is searched from many counts down."""
    devices = [
        device("g0", "fast", 12, [(300.0, 2.0), (200.0, 1.6), (120.0, 1.0)], idle_w=40.0, domain="a"),
        device("g1", "slow", 8, [(150.0, 1.0), (90.0, 0.7)], idle_w=20.0, domain="b"),
    ]
    jobs = [job(f"j{k}", work=2.0 + k % 5, p=0.97, release_hours=0.5 * (k % 4)) for k in range(14)]
    power = {"budget_w": 3_200, "windows": [{"from_hours": 2.0, "to_hours": 4.0, "budget_w": 2_000}],
             "domains": {"a": 2_600}}
    return workload(devices, jobs, power=power)


def test_a_wide_night_under_a_tight_budget_gets_the_same_timelines():
    same_as_every_count_tried(wide_tight_queue())


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(night_queues(max_jobs=6))
def test_random_nights_get_the_same_timelines(queue):
    same_as_every_count_tried(queue)


@given(st.integers(0, 12), st.integers(0, 12), st.integers(-1, 14))
def test_most_that_fit_is_the_largest_count_that_fits(fewest, most, threshold):
    asked: list[int] = []

    def fits(k: int) -> bool:
        asked.append(k)
        return k <= threshold

    expected = max([k for k in range(fewest, most + 1) if k <= threshold], default=fewest - 1)
    assert most_that_fit(fewest, most, fits) == expected
    assert len(asked) <= max(0, most - fewest + 1).bit_length()
