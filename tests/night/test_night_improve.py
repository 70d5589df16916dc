"""The improvement phase (optsched/night/improve.py): insert moves, the search's stopping rules, and a queue where
it beats every dispatch order it starts from; the deadline repair's moves and rules, and a queue where it keeps a
hard deadline no dispatch order keeps."""

from __future__ import annotations

import functools
import random
from types import SimpleNamespace
from typing import Any

import pytest

from optsched.night.improve import (
    held_by,
    local_search,
    misses,
    moved,
    moved_together,
    moves,
    ranks,
    repair_deadlines,
    repair_evaluations,
    search_evaluations,
    start_order,
)
from optsched.night.planner import hopeless_deadlines, score
from optsched.schema.night import NightQueue
from tests.night.conftest import night_checked
from tests.support.factories import device, job, workload

DISPATCH = ("dispatch-priority", "dispatch-deadline", "dispatch-wspt", "dispatch-hybrid")


def test_insert_moves_and_their_sweeps():
    assert moved((0, 1, 2, 3), 3, 1) == (0, 3, 1, 2)
    assert moved((0, 1, 2, 3), 0, 2) == (1, 2, 0, 3)
    # d = 1 once per neighbour pair, then d = 2 both ways.
    assert moves(4, (1, 2)) == [(1, 0), (2, 1), (3, 2), (0, 2), (1, 3), (2, 0), (3, 1)]
    assert search_evaluations(30) == 150 and search_evaluations(60) == 75
    assert repair_evaluations(30) == 80 and repair_evaluations(120) == 30
    assert ranks((2, 0, 1)) == (1, 2, 0)  # job 0 at place 1, job 1 at place 2, job 2 first


def inversions(order: tuple[int, ...]) -> tuple[tuple, None]:
    """Key: pairs out of order (0 only for the sorted order)."""
    return (sum(a > b for k, a in enumerate(order) for b in order[k + 1 :]),), None


def test_the_search_sorts_by_swaps_stops_after_a_quiet_sweep_and_keeps_to_its_count():
    key, _, tried = local_search((3, 1, 2, 0), inversions, evaluations=1_000)
    assert key == (0,)
    # 6 inversions: each sweep of 5 moves (d = 1, 2) keeps some; the last sweep keeps nothing, then it stops.
    assert tried < 1_000
    key, _, tried = local_search((3, 1, 2, 0), inversions, evaluations=3)
    assert tried == 3 and key > (0,)


def soft_deadline_queue() -> dict:
    """10 normal jobs on 2 devices, 60 % with a soft deadline (seeded): no fixed order gets the most out of them."""
    rng = random.Random(4)
    jobs = []
    for k in range(10):
        extra = {"priority": "normal", "weight": rng.choice([1.0, 2.0, 3.0])}
        work = rng.choice([0.5, 1.0, 1.5, 2.0, 3.0])
        if rng.random() < 0.6:
            extra["deadline_hours"] = rng.choice([1.0, 2.0, 3.0, 4.0, 6.0])
        jobs.append(job(f"j{k}", work=work, p=0.0, **extra))
    return workload([device("g", "fast", 2, [(100.0, 1.0)])], jobs)


@pytest.mark.slow
def test_the_search_beats_every_dispatch_order_on_soft_deadlines():
    """Priced weighted completion 5.235 h with 3 soft misses for the best order (dispatch-wspt), 5.059 h with 2
    after the search (measured; the test asserts only that it is lower)."""
    plan = night_checked(soft_deadline_queue(), candidates=(*DISPATCH, "dispatch-search"))
    best = night_checked(soft_deadline_queue(), candidates=DISPATCH)
    assert plan.chosen == "dispatch-search" and best.chosen in DISPATCH
    assert score(plan) < score(best)
    # It started from the best order's starts, and keeps a timeline whose start order is a permutation of the jobs.
    assert sorted(start_order(plan, [f"j{k}" for k in range(10)])) == list(range(10))


DEADLINES = {"j0": 1, "j1": 2, "j2": 4, "j3": 4}  # job j at place k of the order ends at k + 1
IDS = list(DEADLINES)


def one_machine(order: tuple[int, ...], guessing: bool = True) -> tuple[tuple, Any]:
    """Key and a stand-in timeline: the jobs one after another in the order (the job at place k from k to k + 1
    hours), every miss a hard one; without `guessing` the timeline tells no times (`in_time` has nothing to go on)."""
    late = tuple(IDS[j] for k, j in enumerate(order) if k + 1 > DEADLINES[IDS[j]])
    summary = SimpleNamespace(hard_deadlines_missed=late, never_ran=(), soft_deadlines_missed=())
    jobs = [
        SimpleNamespace(job=IDS[j], start_hours=k if guessing else None, finish_hours=k + 1,
                        deadline_hours=DEADLINES[IDS[j]])
        for k, j in enumerate(order)
    ]
    return (len(late), order), SimpleNamespace(summary=summary, order=order, jobs=jobs)


def test_the_repair_moves_late_jobs_earlier_until_none_is_late():
    # (2, 3, 0, 1): j0 and j1 late. j0 ends 2 h late from its start at 2 h: the job starting at 0 h is j2, so
    # it goes first (0, 2, 3, 1); j1 then ends 2 h late from 3 h, and goes before j2, which started at 1 h: 3
    # timelines in all.
    key, plan, tried = repair_deadlines((2, 3, 0, 1), one_machine, IDS, evaluations=100)
    assert plan.order == (0, 1, 2, 3) and misses(plan) == (0, 0, 0) and tried == 3
    # The start's timeline given (`first`) is counted, not computed again.
    computed: list[tuple[int, ...]] = []

    def counting(order: tuple[int, ...]) -> tuple[tuple, Any]:
        computed.append(order)
        return one_machine(order)

    _, plan, tried = repair_deadlines((2, 3, 0, 1), counting, IDS, evaluations=100, first=one_machine((2, 3, 0, 1)))
    assert plan.order == (0, 1, 2, 3) and tried == 3 and computed == [(0, 2, 3, 1), (0, 1, 2, 3)]
    # Without times to guess from, the steps alone: j0 one place earlier misses as many, two places earlier
    # (0, 2, 3, 1) leaves j1 late; j1 one place earlier is still late, two places earlier gives the sorted order.
    stepping = functools.partial(one_machine, guessing=False)
    key, plan, tried = repair_deadlines((2, 3, 0, 1), stepping, IDS, evaluations=100)
    assert plan.order == (0, 1, 2, 3) and tried == 5
    # A hopeless job is not moved: with j0 so, only j1's moves are tried, and j0 stays late.
    _, plan, _ = repair_deadlines((2, 3, 0, 1), stepping, IDS, evaluations=100, hopeless=frozenset({"j0"}))
    assert misses(plan) == (1, 0, 0) and plan.summary.hard_deadlines_missed == ("j0",)
    # Nothing admissible: the start is kept. Its count and the budget's stop end it early.
    _, plan, _ = repair_deadlines((2, 3, 0, 1), one_machine, IDS, evaluations=100, admissible=lambda p: False)
    assert plan.order == (2, 3, 0, 1)
    # From an inadmissible start, a move that makes the timeline admissible is kept even without fewer misses:
    # only orders with j0 second are admissible here; j0 one place earlier, (2, 0, 3, 1), misses as many and is
    # kept; from there no admissible move misses fewer.
    _, plan, _ = repair_deadlines((2, 3, 0, 1), stepping, IDS, evaluations=100, admissible=lambda p: p.order[1] == 0)
    assert plan.order == (2, 0, 3, 1) and misses(plan) == (2, 0, 0)
    assert repair_deadlines((2, 3, 0, 1), one_machine, IDS, evaluations=2)[2] == 2
    assert repair_deadlines((2, 3, 0, 1), one_machine, IDS, evaluations=100, stop=lambda: True)[2] == 1


CHAIN = {"x": 4.0, "y": 4.0, "a": None, "b": 2.0}  # deadlines; b after a; one machine, 1 h each
CHAIN_IDS = list(CHAIN)
CHAIN_AFTER = ((), (), (), (2,))


def one_machine_chain(order: tuple[int, ...]) -> tuple[tuple, Any]:
    """A stand-in list schedule on one machine: each hour the first job of the order whose predecessor is done."""
    done: list[int] = []
    while len(done) < len(order):
        done.append(next(j for j in order if j not in done and all(i in done for i in CHAIN_AFTER[j])))
    jobs = [
        SimpleNamespace(job=CHAIN_IDS[j], start_hours=k, finish_hours=k + 1, deadline_hours=CHAIN[CHAIN_IDS[j]])
        for k, j in enumerate(done)
    ]
    late = tuple(t.job for t in jobs if t.deadline_hours is not None and t.finish_hours > t.deadline_hours)
    summary = SimpleNamespace(hard_deadlines_missed=late, never_ran=(), soft_deadlines_missed=())
    return (len(late), order), SimpleNamespace(summary=summary, order=order, jobs=jobs)


def test_a_late_job_that_waited_for_its_predecessor_moves_the_predecessor():
    # (x, y, a, b): b runs 3-4 h, due at 2 h, started as a finished: its holder is a.
    _, start = one_machine_chain((0, 1, 2, 3))
    where = {t.job: t for t in start.jobs}
    assert held_by(where, CHAIN_IDS, CHAIN_AFTER, 3) == (2, 3) and held_by(where, CHAIN_IDS, CHAIN_AFTER, 0) == (0,)
    # Moving b alone changes nothing (it waits for a, and a waits behind x and y): the repair without `after`
    # keeps the miss. With it, a goes 2 h sooner (first) and b right after it: 2 timelines.
    _, plan, _ = repair_deadlines((0, 1, 2, 3), one_machine_chain, CHAIN_IDS, evaluations=100)
    assert misses(plan) == (1, 0, 0)
    _, plan, tried = repair_deadlines((0, 1, 2, 3), one_machine_chain, CHAIN_IDS, evaluations=100, after=CHAIN_AFTER)
    assert plan.order == (2, 3, 0, 1) and misses(plan) == (0, 0, 0) and tried == 2
    assert moved_together((0, 1, 2, 3, 4), (3, 1), 0) == (3, 1, 0, 2, 4)
    assert moved_together((0, 1, 2, 3, 4), (4,), 2) == moved((0, 1, 2, 3, 4), 4, 2) == (0, 1, 4, 2, 3)


def test_a_deadline_no_order_can_keep_is_hopeless_and_one_within_reach_is_not():
    # On 2 devices of speed 2 at p = 0.5, S(2 devices) = 1 / (0.5 / 2 + 0.5 / 4) = 8 / 3: 4 h of work take 1.5 h.
    queue = NightQueue.load(workload([device("g", "fast", 2, [(100.0, 2.0)])], [
        job("late", work=4.0, p=0.5, deadline_hours=1.4),  # 1.5 h at best: hopeless
        job("just", work=4.0, p=0.5, deadline_hours=1.6),  # within reach alone
        job("after", work=4.0, p=0.5, release_hours=0.5, deadline_hours=1.9),  # released at 0.5 h: 2.0 h at best
        job("free", work=4.0, p=0.5),  # no deadline
        job("one", work=4.0, p=0.5, max_devices=1, deadline_hours=2.5),  # one device: 2.0 h, within reach
        # After `just` (1.5 h at best): 3.0 h at best, so hopeless at 2.9 h although within reach alone.
        job("chained", work=4.0, p=0.5, after=["just"], deadline_hours=2.9),
        job("chained-ok", work=4.0, p=0.5, after=["just"], deadline_hours=3.1),
    ]))
    assert hopeless_deadlines(queue) == frozenset({"late", "after", "chained"})


def deadline_queue(seed: int) -> dict:
    """12 jobs on 3 devices, most with a deadline, a third high priority (hard), some released later (seeded)."""
    rng = random.Random(seed)
    jobs = []
    for k in range(12):
        extra: dict[str, Any] = {"priority": rng.choice(["normal", "normal", "high"]), "weight": rng.choice([1.0, 2.0])}
        if rng.random() < 0.7:
            extra["deadline_hours"] = rng.choice([1.0, 1.5, 2.0, 3.0, 4.0])
        if rng.random() < 0.3:
            extra["release_hours"] = rng.choice([0.5, 1.0])
        jobs.append(job(f"j{k}", work=rng.choice([0.5, 1.0, 1.5, 2.0]), p=0.5, max_devices=2, **extra))
    return workload([device("g", "fast", 3, [(100.0, 1.0)])], jobs)


@pytest.mark.slow
def test_the_repair_keeps_a_hard_deadline_every_dispatch_order_misses():
    """Seed 12: the best dispatch order (dispatch-wspt) misses 3 hard deadlines, the repair from it 2, at the same
    weighted completion (3.203 h; measured, the test asserts fewer misses and a verified timeline)."""
    candidates = (*DISPATCH, "dispatch-edf")
    best = night_checked(deadline_queue(12), candidates=candidates)
    plan = night_checked(deadline_queue(12), candidates=(*candidates, "dispatch-repair"))
    assert plan.chosen == "dispatch-repair" and best.chosen in candidates
    assert misses(plan) < misses(best)
