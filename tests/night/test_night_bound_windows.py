"""The time-indexed model's time windows: no job progresses before its release and its predecessors' earliest
ends, nor finishes before its earliest start plus its fastest run."""

from __future__ import annotations

import pytest

from optsched.night.bound import build, earliest_starts, night_bound, slot_edges
from optsched.night.fleet import Fleet
from optsched.schema.night import BoundStatus, NightQueue
from tests.support.factories import device, job, workload


def chain_queue() -> NightQueue:
    """Two devices (speed 1). A (2 h of work, p = 1: 1 h on both) -> B (1 h, p = 0: 1 h), C released at 0.5 h
    (1 h, p = 0.5: S = 4/3 on two, 0.75 h) -> D after B and C (0.5 h, p = 0)."""
    return NightQueue.load(
        workload(
            [device("g", "m", 2, [(100, 1.0)])],
            [
                job("A", work=2.0, p=1.0),
                job("B", work=1.0, p=0.0, after=["A"]),
                job("C", work=1.0, p=0.5, release_hours=0.5),
                job("D", work=0.5, p=0.0, after=["B", "C"]),
            ],
        )
    )


def test_earliest_starts_follow_releases_and_chains():
    """A at 0; B after A's fastest run (1 h); C at its release 0.5 h; D after B (1 + 1 = 2 h) and C (1.25 h)."""
    queue = chain_queue()
    fleet = Fleet(queue)
    model = build(queue, fleet, slot_edges(queue, 4.0, 0.25))
    assert earliest_starts(model) == pytest.approx([0.0, 1.0, 0.5, 2.0])


def test_the_model_fixes_unfinished_slots_and_keeps_progress_after_the_earliest_start():
    queue = chain_queue()
    model = build(queue, Fleet(queue), slot_edges(queue, 4.0, 0.25))
    m = model.m
    # D (index 3) starts at 2 h at the earliest and runs 0.5 h at best: unfinished in every slot before 2.5 h.
    assert [m.lower[model.u[3, t]] for t in range(12)] == [1.0] * 10 + [0.0] * 2
    assert [m.upper[model.x[3, t]] for t in range(10)] == [0.0] * 8 + [0.5, 0.5]
    assert m.lower[model.c[3]] == pytest.approx(2.5)


def test_the_bound_is_below_a_hand_built_timeline():
    """A on both 0-1 h, then B and C side by side from 1 h (C alone on one device: S = 1, 1 h; B 1 h): both end
    at 2 h, D 2-2.5 h: weighted mean (equal weights) (1 + 2 + 2 + 2.5) / 4 = 1.875 h.
    The bound may not exceed the value of any timeline."""
    bound = night_bound(chain_queue(), hours=4.0, time_limit_s=20)
    assert bound.status != BoundStatus.skipped
    assert bound.weighted_completion_bound_hours <= 1.875 + 1e-6
