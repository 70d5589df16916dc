"""The reference search (`dispatch-reference`, optsched.night.planner): where no night with the fewest hard misses
meets the reference, local search over a dispatch candidate's order lowers its `shortfall`
(optsched.night.improve), how many of the reference's measures the night misses and by how much."""

from __future__ import annotations

import math

from hypothesis import given, settings

from optsched.night.dispatch import DispatchPolicy
from optsched.night.improve import shortfall
from optsched.night.planner import REFERENCE_NAME, REFERENCE_SLACK, meets_reference, reference_seed, score
from tests.night.conftest import night_checked
from tests.night.night_factories import night_queues
from tests.support.factories import device, job, workload

BASELINES = ("fifo", "edf", "easy", "conservative")


@settings(max_examples=30, deadline=None)
@given(night_queues(max_jobs=5))
def test_a_night_meets_the_reference_exactly_when_it_falls_short_on_no_measure(queue):
    nights = {name: night_checked(queue, name) for name in BASELINES}
    for name, night in nights.items():
        others = [n for other, n in nights.items() if other != name]
        if night.summary.weighted_mean_completion_hours is None:
            continue
        count, excess = shortfall(night, others, REFERENCE_SLACK)
        assert meets_reference(night, others) == (count == 0), name
        assert (excess == 0.0) == (count == 0) and excess >= 0.0
        assert shortfall(night, [night], REFERENCE_SLACK) == (0, 0.0)


def two_soft_jobs() -> dict:
    """One device of speed 1; L (2 h, due at 2.5 h) and S (1 h, due at 1.5 h), both soft: S first keeps both
    deadlines (1 h and 3 h, L late by 0.5 h), L first keeps L's and misses S's."""
    return workload(
        [device("g", "m", 1, [(100, 1.0)])],
        [job("L", work=2, p=1.0, deadline_hours=2.5), job("S", work=1, p=1.0, deadline_hours=1.5)],
    )


def test_the_shortfall_counts_each_measure_and_its_excess():
    s_first = night_checked(two_soft_jobs(), "edf")  # S (1.5 h) before L (2.5 h): L ends at 3 h, late
    l_first = night_checked(two_soft_jobs(), "fifo")  # L before S: S ends at 3 h, late
    assert len(s_first.summary.soft_deadlines_missed) == len(l_first.summary.soft_deadlines_missed) == 1
    # Weighted completion: S first (1 + 3) / 2 = 2 h, L first (2 + 3) / 2 = 2.5 h, 25 % above.
    assert shortfall(l_first, [s_first], REFERENCE_SLACK) == (1, 0.25)
    assert shortfall(s_first, [l_first], REFERENCE_SLACK) == (0, 0.0)


def test_the_search_starts_from_the_dispatch_candidate_nearest_the_reference_and_not_where_one_meets_it():
    queue = two_soft_jobs()
    runs = [DispatchPolicy("dispatch-wspt", order="wspt"), DispatchPolicy("dispatch-edf-mixed", order="edf-mixed")]
    nights = [night_checked(queue, candidates=(policy.name,)) for policy in runs]
    timelines = [((*score(night), k), night) for k, night in enumerate(nights)]
    reference = [night_checked(queue, name) for name in BASELINES]
    met = [meets_reference(night, reference) for night in nights]
    seed = reference_seed(timelines, runs, reference)
    if any(met):
        assert seed is None
    else:
        assert seed is not None
        nearest = min(range(len(nights)), key=lambda k: shortfall(nights[k], reference, REFERENCE_SLACK))
        assert seed[0] is runs[nearest]
    # Where one of them is made the reference itself, it meets it and the search does not start.
    assert reference_seed(timelines, runs, [nights[0]]) is None


@settings(max_examples=20, deadline=None)
@given(night_queues(max_jobs=5))
def test_naming_the_reference_search_runs_it_with_its_reference_and_every_night_verifies(queue):
    alone = night_checked(queue, candidates=("dispatch-edf-mixed",))
    plan = night_checked(queue, candidates=("dispatch-edf-mixed", REFERENCE_NAME))
    assert night_checked(queue, candidates=("dispatch-edf-mixed", REFERENCE_NAME)) == plan
    # The list schedulers run as its reference (and candidates): the plan ranks no worse on hard misses and jobs
    # never run than the candidate alone.
    s, a = plan.summary, alone.summary
    assert (len(s.hard_deadlines_missed), len(s.never_ran)) <= (len(a.hard_deadlines_missed), len(a.never_ran))
    assert math.isfinite(s.makespan_hours)
