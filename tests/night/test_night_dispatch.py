"""The planner over time: completion-aware starts, elastic growth, effective deadlines, and the best of its
candidate policies (each timeline through the verifier); the dispatch's count of the devices free at later instants."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from optsched.night.dispatch import free_over
from optsched.night.fleet import Fleet, Use
from optsched.night.planner import CANDIDATE_NAMES, score
from optsched.schema.night import NightQueue
from optsched.schema.tolerances import TIME_TOL_HOURS
from tests.night.conftest import night_checked
from tests.night.test_night_exact import hand_queue
from tests.support.factories import device, job, workload


def fast_and_slow() -> dict:
    """2 slow devices (speed 0.5) and 2 fast ones (speed 2); X holds the fast ones 0-1 h. L (8 h of work, p = 1,
    2 devices) ends at 8 h if it starts at once on the slow ones, at 1 + 8 / 4 = 3 h if it waits for the fast."""
    return workload(
        [device("slow", "s", 2, [(100, 0.5)]), device("fast", "f", 2, [(300, 2.0)])],
        [
            job("X", work=4, p=1.0, max_devices=2, allowed_models=["f"]),
            job("L", work=8, p=1.0, max_devices=2),
        ],
    )


@pytest.mark.parametrize("candidate", ["dispatch-priority", "dispatch-wspt"])
def test_a_job_waits_for_faster_devices_when_that_ends_it_sooner(candidate):
    plan = night_checked(fast_and_slow(), candidates=(candidate,))
    assert {j.job: (j.start_hours, j.finish_hours) for j in plan.jobs} == {"X": (0.0, 1.0), "L": (1.0, 3.0)}
    assert plan.jobs[1].segments[0].allocations[0].device == "fast"


def test_the_milp_moves_a_job_off_slow_devices_as_soon_as_fast_ones_free_up():
    """Deciding X and L at the same instant, the MILP starts L on the slow devices; at 1 h L (elastic) moves to
    the fast ones: 1 h of work done, 0.1 h restart, 7 h of work at S = 4: it ends at 2.85 h, before 3 h."""
    plan = night_checked(fast_and_slow(), candidates=("milp",), restart_hours=0.1)
    long = plan.jobs[1]
    assert [(s.from_hours, pytest.approx(s.to_hours), s.restart, s.allocations[0].device) for s in long.segments] == [
        (0.0, 1.0, False, "slow"),
        (1.0, 1.1, True, "fast"),
        (pytest.approx(1.1), 2.85, False, "fast"),
    ]


def grow_queue(elastic: bool) -> dict:
    """4 devices (speed 1); A (high, 9 h of work, 3 devices) runs 0-3 h. B (4 h, p = 1, up to 4 devices) starts at once
    on the free one (ending at 4 h, no later than waiting for A). At 3 h A ends: elastic, B grows to 4 devices,
    restarts (0.1 h) and does its last hour of work in 0.25 h, ending at 3.35 h."""
    return workload(
        [device("g", "m", 4, [(100, 1.0)])],
        [
            job("A", work=9, p=1.0, max_devices=3, priority="high"),
            job("B", work=4, p=1.0, max_devices=4, elastic=elastic),
        ],
    )


def test_an_elastic_job_grows_onto_freed_devices_paying_its_restart():
    plan = night_checked(grow_queue(True), candidates=("dispatch-priority",), restart_hours=0.1)
    b = next(j for j in plan.jobs if j.job == "B")
    assert [
        (s.from_hours, pytest.approx(s.to_hours), s.restart, sum(len(a.devices) for a in s.allocations))
        for s in b.segments
    ] == [
        (0.0, 3.0, False, 1),
        (3.0, 3.1, True, 4),
        (pytest.approx(3.1), 3.35, False, 4),
    ]
    assert b.restarts == 1 and next(e for e in plan.events if e.at_hours == 3.0).moved == ("B",)


def test_a_job_marked_not_elastic_keeps_its_devices():
    plan = night_checked(grow_queue(False), candidates=("dispatch-priority",), restart_hours=0.1)
    b = next(j for j in plan.jobs if j.job == "B")
    assert [(s.from_hours, s.to_hours) for s in b.segments] == [(0.0, 4.0)] and b.restarts == 0


def test_deadlines_propagate_backwards_along_after_chains():
    q = NightQueue.load(
        workload(
            [device("g", "m", 2, [(100, 1.0)])],
            [
                job("prep", work=1, p=1.0, max_devices=1),
                job("train", work=4, p=1.0, after=["prep"]),
                job("eval", work=1, p=1.0, max_devices=1, after=["train"], deadline_hours=6),
                job("free", work=1),
            ],
        )
    )
    # eval needs 1 h at best: train must end by 5 h; train needs 2 h on both devices: prep by 3 h.
    assert Fleet(q).effective_deadlines == (3.0, 5.0, 6.0, None)


def chain_before_a_hard_deadline() -> dict:
    """One device (speed 1). crit (critical, 1 h, due at 2.05 h) runs after prep (normal, 1 h): prep must end by
    1.05 h. H (normal, weight 2: objective weight 4, 2 h) and L (low, 0.1 h) have no deadline; by Smith's rule L
    (1 / 0.1) goes before H (4 / 2), and H ties with prep (2 / 1) and comes first in the queue."""
    return workload(
        [device("g", "m", 1, [(100, 1.0)])],
        [
            job("H", work=2, p=1.0, max_devices=1, weight=2.0),
            job("prep", work=1, p=1.0, max_devices=1),
            job("crit", work=1, p=1.0, max_devices=1, priority="critical", after=["prep"], deadline_hours=2.05),
            job("L", work=0.1, p=1.0, max_devices=1, priority="low"),
        ],
    )


def test_hard_deadlines_propagate_to_the_jobs_a_hard_job_waits_on():
    assert Fleet(NightQueue.load(chain_before_a_hard_deadline())).hard_deadlines == (
        None,
        pytest.approx(1.05),
        2.05,
        None,
    )


def test_the_hybrid_order_protects_a_hard_jobs_predecessor_and_orders_the_rest_by_smiths_rule():
    """dispatch-hybrid: prep 0-1 and crit 1-2 (met), then L 2-2.1 and H 2.1-4.1: weighted mean completion
    (2 x 1 + 8 x 2 + 1 x 2.1 + 4 x 4.1) / 15 = 36.5 / 15 h. Smith's rule alone (dispatch-wspt) runs L, H, prep and
    crit misses; priority and deadline orders run H before L (38.1 / 15 h): every other candidate scores worse but
    dispatch-hybrid-soft and -soft-tight, the same order without a soft deadline, which tie it and rank after it."""
    plan = night_checked(chain_before_a_hard_deadline(), candidates=("dispatch-hybrid",))
    assert {j.job: (j.start_hours, pytest.approx(j.finish_hours)) for j in plan.jobs} == {
        "prep": (0.0, 1.0),
        "crit": (1.0, 2.0),
        "L": (2.0, 2.1),
        "H": (pytest.approx(2.1), 4.1),
    }
    assert plan.summary.hard_deadlines_missed == ()
    assert plan.summary.weighted_mean_completion_hours == pytest.approx(36.5 / 15)
    for name in CANDIDATE_NAMES:
        other = score(night_checked(chain_before_a_hard_deadline(), candidates=(name,)))
        if name in ("dispatch-hybrid-soft", "dispatch-hybrid-soft-tight"):
            assert score(plan) == other
        elif name != "dispatch-hybrid":
            assert score(plan) < other, name
    assert night_checked(chain_before_a_hard_deadline()).chosen == "dispatch-hybrid"


def test_the_planner_keeps_the_best_of_its_candidates():
    plan = night_checked(hand_queue())
    assert plan.policy == "planner" and plan.chosen in CANDIDATE_NAMES
    for name in CANDIDATE_NAMES:
        assert score(plan) <= score(night_checked(hand_queue(), candidates=(name,)))


def test_a_critical_job_needing_two_devices_at_once_is_not_starved_by_single_device_jobs():
    """Two devices. L2 holds one until 3 h; C (critical, no deadline, needs both) is released at 0.5 h behind a
    stream of 1 h low jobs. C reserves both devices for 3 h; low jobs backfill only if they end by then; C runs
    3-4 h (its wait, 2.5 h, is reported)."""
    low = [job(f"L{k}", work=1, p=1.0, max_devices=1, priority="low", release_hours=0.5) for k in range(3, 9)]
    q = workload(
        [device("g", "m", 2, [(100, 1.0)])],
        [
            job("L1", work=1, p=1.0, max_devices=1, priority="low"),
            job("L2", work=3, p=1.0, max_devices=1, priority="low"),
            job("C", work=2, p=1.0, min_devices=2, priority="critical", release_hours=0.5),
            *low,
        ],
    )
    for candidate in ("dispatch-priority", "dispatch-wspt", None):
        plan = night_checked(q, candidates=None if candidate is None else (candidate,))
        c = next(j for j in plan.jobs if j.job == "C")
        assert (c.start_hours, c.finish_hours, c.wait_hours) == (3.0, 4.0, 2.5), candidate


def test_preemption_also_serves_a_due_job_whose_free_devices_are_too_few():
    """3 devices; L (low) holds 2 until 10 h. C (critical, 3 h of work, deadline 2.6 h) is released at 1 h: on the
    one free device it would end at 4 h. With preemption L makes room: C runs 1-2 h on all three."""
    q = workload(
        [device("g", "m", 3, [(100, 1.0)])],
        [
            job("L", work=20, p=1.0, max_devices=2, priority="low"),
            job("C", work=3, p=1.0, max_devices=3, priority="critical", release_hours=1, deadline_hours=2.6),
        ],
    )
    plan = night_checked(q, candidates=("milp",), preempt=True, restart_hours=0.1)
    c = next(j for j in plan.jobs if j.job == "C")
    assert (c.start_hours, c.finish_hours, c.deadline_met) == (1.0, 2.0, True)
    assert next(e for e in plan.events if e.at_hours == 1.0).preempted == ("L",)
    missed = night_checked(q, candidates=("milp",))
    assert next(j for j in missed.jobs if j.job == "C").deadline_met is False


@st.composite
def running_and_reserved(draw) -> tuple:
    """Free devices per group, running jobs' devices and ends, reservations and instants, as the dispatch has them."""
    groups = draw(st.integers(1, 3))
    free = draw(st.lists(st.integers(0, 4), min_size=groups, max_size=groups))
    times = st.sampled_from([0.5, 1.0, 1.0 + 1e-12, 1.5, 2.0, math.inf])

    def some_uses() -> tuple[Use, ...]:
        chosen = draw(st.lists(st.integers(0, groups - 1), min_size=1, max_size=groups, unique=True))
        return tuple(Use(g, 0, draw(st.integers(1, 3))) for g in sorted(chosen))

    running = draw(st.integers(0, 4))
    uses = {i: some_uses() for i in range(running)}
    ends = {i: draw(times) for i in range(running)}
    held = [(draw(times), [], some_uses()) for _ in range(draw(st.integers(0, 2)))]
    instants = sorted(draw(st.lists(times.filter(math.isfinite), max_size=5)))
    return free, uses, ends, held, instants


def _free_then(free, uses, ends, at: float, held) -> list[int]:
    """The count at one instant, by its definition: free now, plus the devices of the jobs ending by then, less
    those of the reservations starting by then."""
    then = list(free)
    for i, us in uses.items():
        if ends[i] <= at + TIME_TOL_HOURS:
            for u in us:
                then[u.group] += u.count
    for when, _, reserved in held:
        if when <= at + TIME_TOL_HOURS:
            for u in reserved:
                then[u.group] -= u.count
    return [max(0, n) for n in then]


@given(running_and_reserved())
def test_the_devices_free_at_each_instant_in_one_sweep_are_those_counted_at_each(case):
    free, uses, ends, held, instants = case
    swept = free_over(free, uses, ends, instants, held)
    assert swept == [_free_then(free, uses, ends, at, held) for at in instants]
