"""The time-indexed bound (optsched.night.bound): at most the optimum found by exhaustive search on tiny queues, its
MILP at that optimum where the slots fit the jobs, at most every verified timeline's value on random queues."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings

from optsched.model.amdahl import speedup
from optsched.night import plan_night
from optsched.night.bound import BOUND_MIN_SLOTS, hull_levels, night_bound, placement_columns
from optsched.night.fleet import Fleet
from optsched.night.planner import SOFT_MISS_HOURS, priced_completion, score
from optsched.schema.errors import InvalidWorkload
from optsched.schema.night import BoundStatus, NightQueue
from tests.night.conftest import START, night_checked
from tests.night.night_factories import night_queues
from tests.support.factories import device, job, workload


def exhaustive_wmct(works: list[float], weights: list[float], machines: int) -> float:
    """Least sum w C / sum w of p = 1 jobs on identical unit-speed machines, one machine each: every order of the
    jobs, each job on the machine free first (list scheduling in some order reaches every non-delay schedule, and
    on identical machines preemption does not lower sum w C, McNaughton 1959)."""
    best = math.inf
    for order in itertools.permutations(range(len(works))):
        free = [0.0] * machines
        total = 0.0
        for j in order:
            k = min(range(machines), key=free.__getitem__)
            free[k] += works[j]
            total += weights[j] * free[k]
        best = min(best, total)
    return best / sum(weights)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("machines", "works", "weights"),
    [
        (1, [0.5, 1.0, 0.25], [1.0, 2.0, 0.5]),
        (1, [1.0, 0.5, 0.75, 0.25], [2.0, 1.0, 1.0, 2.0]),
        (2, [1.0, 0.5, 0.75, 0.25, 1.5], [2.0, 1.0, 1.0, 2.0, 0.5]),
    ],
)
def test_bound_and_milp_against_the_exhaustive_optimum(machines, works, weights):
    queue = NightQueue.load(
        workload(
            [device("g", "m", machines, [(100, 1.0)])],
            [
                job(f"j{k}", work=w, p=1.0, max_devices=1, weight=x)
                for k, (w, x) in enumerate(zip(works, weights, strict=True))
            ],
        )
    )
    optimum = exhaustive_wmct(works, weights, machines)
    lp = night_bound(queue, hours=3.0, mip=False)
    milp = night_bound(queue, hours=3.0, time_limit_s=60, mip_gap=1e-6)
    assert lp.status == BoundStatus.bound and milp.status == BoundStatus.optimal
    assert lp.weighted_completion_bound_hours <= milp.weighted_completion_bound_hours + 1e-9
    assert milp.weighted_completion_bound_hours <= optimum + 1e-9
    # Works are whole slots (0.25 h): the MILP's optimum is the exhaustive one.
    assert milp.weighted_completion_optimum_hours == pytest.approx(optimum, rel=1e-6)


def test_a_lone_parallel_job_is_bounded_by_its_best_run():
    queue = NightQueue.load(
        workload(
            [device("fast", "a", 2, [(300, 2.0), (200, 1.5)]), device("slow", "b", 4, [(100, 1.0)])],
            [job("A", work=6.0, p=0.9, max_devices=3, release_hours=0.5)],
        )
    )
    best = 0.5 + 6.0 / speedup(0.9, 2.0, 2.0 + 2.0 + 1.0)
    milp = night_bound(queue, hours=8.0, time_limit_s=30)
    assert milp.weighted_completion_optimum_hours == pytest.approx(best, rel=1e-6)
    assert milp.weighted_completion_bound_hours <= best


def test_hull_levels_drop_levels_a_mix_of_others_beats():
    queue = NightQueue.load(
        workload([device("g", "m", 1, [(700, 3.7), (525, 3.626), (467, 3.441), (350, 2.257)], idle_w=70)], [])
    )
    # 350 W (280 W above idle, speed 2.257) lies below the chord from (0, 0) to 467 W (397 W, 3.441).
    assert hull_levels(queue, 0) == (0, 1, 2)


def test_a_queue_over_the_size_limit_gets_longer_slots_and_is_skipped_only_below_the_least_slots():
    queue = NightQueue.load(workload([device("g", "m", 2, [(100, 1.0)])], [job("A", work=1.0, p=1.0)]))
    # One placement column per slot: 32 slots of 15 min over 8 h, 10 allowed.
    coarse = night_bound(queue, hours=8.0, max_columns=10)
    assert coarse.status == BoundStatus.optimal and coarse.slot_hours == pytest.approx(0.8)
    assert coarse.weighted_completion_bound_hours == pytest.approx(0.5, rel=1e-5)  # 1 h of work on both devices
    skipped = night_bound(queue, hours=8.0, max_columns=BOUND_MIN_SLOTS - 1)
    assert skipped.status == BoundStatus.skipped
    assert f"over the limit of {BOUND_MIN_SLOTS - 1}" in skipped.reason
    assert skipped.weighted_completion_bound_hours is None
    assert skipped.energy_bound_kwh is not None  # closed form, always there


def test_the_energy_bound_counts_the_idle_draw_until_the_last_job_can_end():
    queue = workload([device("g", "m", 1, [(100, 1.0)], idle_w=10)], [job("long", work=20.0, p=1.0)])
    bound = night_bound(NightQueue.load(queue), hours=8.0, time_limit_s=5)
    # 20 h of work on the one device: idle 10 W and 90 W above it for 20 h, past the 8-h night (1.88 kWh).
    assert bound.energy_bound_kwh == pytest.approx((10 * 20 + 90 * 20) / 1000, rel=1e-5)
    plan = night_checked(queue, bound_time_limit_s=0)
    assert plan.summary.makespan_hours == pytest.approx(20.0)
    assert bound.energy_bound_kwh <= plan.summary.energy_kwh


def test_plan_night_reports_its_gaps_to_the_bound():
    queue = workload(
        [device("g", "m", 2, [(100, 1.0), (50, 0.6)], idle_w=10)],
        [job("A", work=2.0, p=0.9, max_devices=2), job("B", work=1.0, p=1.0, after=["A"]), job("C", work=0.5, p=1.0)],
        power={"budget_w": 170},
    )
    plan = night_checked(queue)
    b = plan.summary.bound
    assert b is not None and b.status in (BoundStatus.bound, BoundStatus.optimal)
    assert 0 <= b.weighted_completion_gap < 1 and 0 <= b.energy_gap < 1
    assert b.weighted_completion_bound_hours == pytest.approx(
        plan.summary.weighted_mean_completion_hours * (1 - b.weighted_completion_gap)
    )
    assert night_checked(queue, bound_time_limit_s=0).summary.bound is None
    with pytest.raises(InvalidWorkload) as err:
        plan_night(queue, start=START, hours=8, bound_time_limit_s=-1)
    assert err.value.errors[0].path == "bound_time_limit_s"


@pytest.mark.slow
@settings(max_examples=20, deadline=None)
@given(night_queues())
def test_the_bound_is_below_every_verified_timeline(queue):
    # A dual bound stopped by its time limit is still a bound: a short limit keeps the test quick.
    loaded = NightQueue.load(queue)
    bound = night_bound(loaded, hours=8.0, time_limit_s=5)
    if bound.status == BoundStatus.skipped:
        assert bound.reason
        return
    # The grid of a queue over the size limit: a few long slots, and one more at each window edge.
    most = 4 + 2 * len(loaded.power.windows)
    per_slot = placement_columns(loaded, Fleet(loaded), 1)
    coarse = night_bound(loaded, hours=8.0, time_limit_s=5, max_columns=most * per_slot)
    assert coarse.status != BoundStatus.skipped and coarse.slots - 1 <= most
    for policy in ("fifo", "edf", "easy", "conservative"):
        s = night_checked(queue, policy).summary
        # Both bounds hold for timelines that finish every job (a timeline that runs nothing spends nothing).
        if not s.never_ran:
            assert bound.energy_bound_kwh <= s.energy_kwh + 1e-9
            assert bound.weighted_completion_bound_hours <= s.weighted_mean_completion_hours + 1e-9
            assert coarse.weighted_completion_bound_hours <= s.weighted_mean_completion_hours + 1e-9


@pytest.mark.slow
@settings(max_examples=15, deadline=None)
@given(night_queues(max_jobs=7))
def test_the_bound_with_its_valid_rows_is_below_the_planners_verified_timeline(queue):
    """The MILP's dual bound (with the rows rate_active, unfinished and remaining_time) never passes the weighted
    mean completion of the planner's own timeline, every candidate and the final choice included."""
    plan = night_checked(queue, bound_time_limit_s=0)
    if plan.summary.never_ran:
        return
    bound = night_bound(NightQueue.load(queue), hours=8.0, horizon_hours=plan.summary.makespan_hours, time_limit_s=5)
    if bound.status == BoundStatus.skipped:
        assert bound.reason
        return
    assert bound.weighted_completion_bound_hours <= plan.summary.weighted_mean_completion_hours + 1e-9
    if bound.weighted_completion_optimum_hours is not None:
        assert bound.weighted_completion_optimum_hours <= plan.summary.weighted_mean_completion_hours + 1e-6


def test_a_missed_soft_deadline_costs_its_job_soft_miss_hours_in_the_ranking():
    """FIFO on one device: A 0-2 h, B 2-3 h misses its soft deadline at 1.5 h: weighted mean completion
    (2 + 3) / 2 = 2.5 h, priced 2.5 + SOFT_MISS_HOURS x 1 / 2."""
    queue = workload(
        [device("g", "m", 1, [(100, 1.0)])],
        [job("A", work=2.0, p=1.0), job("B", work=1.0, p=1.0, deadline_hours=1.5)],
    )
    plan = night_checked(queue, "fifo")
    assert plan.summary.soft_deadlines_missed == ("B",)
    assert plan.summary.weighted_mean_completion_hours == pytest.approx(2.5)
    assert priced_completion(plan) == pytest.approx(2.5 + SOFT_MISS_HOURS / 2)
    assert score(plan)[2] == pytest.approx(2.5 + SOFT_MISS_HOURS / 2)
