"""Issue 25: a night's device failures are checked by a sweep in O(N log N), with the verdicts of the pairwise
check it replaced (kept here as the oracle)."""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from optsched.schema.night import DeviceFailure, NightQueue, _failure_problems, devices_down_at_failures
from optsched.schema.tolerances import TIME_TOL_HOURS
from optsched.schema.workload import DeviceGroup, PowerLevel
from optsched.service.kinds.night_plan import BOUND_TIME_LIMIT_S
from optsched.verify.timeline import _down_at, down_spans
from tests.support.factories import failure_queue

LEVELS = (PowerLevel(cap_w=300.0, speed=1.0),)


def pairwise_down(failures: tuple[DeviceFailure, ...]) -> list[int]:
    """The check before issue 25: every pair of failures compared."""
    return [
        sum(o.count for o in failures if o.device == f.device and o.at_hours <= f.at_hours < o.back_hours)
        for f in failures
    ]


def scanned_spans(q: NightQueue) -> dict[tuple[str, int], list[tuple[float, float]]]:
    """The verifier's down spans before issue 25: each failure scans its group's devices."""
    spans: dict[tuple[str, int], list[tuple[float, float]]] = {}
    counts = {g.id: g.count for g in q.devices}
    for f in sorted(q.failures, key=lambda f: f.at_hours):
        up = [
            i
            for i in range(counts.get(f.device, 0))
            if not any(a <= f.at_hours + TIME_TOL_HOURS < b for a, b in spans.get((f.device, i), ()))
        ]
        for i in up[: f.count]:
            spans.setdefault((f.device, i), []).append((f.at_hours, f.at_hours + f.repair_hours))
    return spans


# Coarse instants and repairs so that ties (failures at one instant, a repair ending as another failure starts)
# are frequent.
instants = st.integers(0, 12).map(lambda k: k / 2)
failure_lists = st.lists(
    st.builds(
        DeviceFailure,
        device=st.sampled_from(["a", "b", "ghost"]),
        count=st.integers(1, 3),
        at_hours=instants,
        repair_hours=st.integers(1, 6).map(lambda k: k / 2),
    ),
    max_size=25,
)


def night(failures: list[DeviceFailure]) -> NightQueue:
    groups = (
        DeviceGroup(id="a", model="m", count=4, power_levels=LEVELS),
        DeviceGroup(id="b", model="m", count=2, power_levels=LEVELS),
    )
    return NightQueue.model_construct(devices=groups, failures=tuple(failures))


@settings(max_examples=300, deadline=None)
@given(failure_lists)
def test_the_sweep_counts_what_the_pairwise_check_counted(failures):
    assert devices_down_at_failures(failures) == pairwise_down(tuple(failures))


@settings(max_examples=300, deadline=None)
@given(failure_lists)
def test_the_verifiers_down_spans_are_those_of_the_scan(failures):
    q = night(failures)
    spans = down_spans(q)
    assert dict(spans) == scanned_spans(q)
    events = [k / 4 for k in range(30)]
    listed = _down_at([t + TIME_TOL_HOURS for t in events], spans)
    for t, down in zip(events, listed, strict=True):
        want: dict[str, list[int]] = {}
        for (device, i), pairs in sorted(spans.items()):
            if any(a <= t + TIME_TOL_HOURS < b for a, b in pairs):
                want.setdefault(device, []).append(i)
        assert down == want


def test_too_many_devices_down_is_named_at_its_failure():
    q = night(
        [
            DeviceFailure(device="b", count=1, at_hours=1.0, repair_hours=2.0),
            DeviceFailure(device="b", count=2, at_hours=2.0, repair_hours=1.0),
            DeviceFailure(device="b", count=2, at_hours=3.0, repair_hours=1.0),  # the first is back at 3.0
        ]
    )
    problems = _failure_problems(q)
    assert [(p.path, p.message) for p in problems] == [
        ("failures[1].count", "3 devices of 'b' would be down at 2 h; the group has 2")
    ]


def test_ten_thousand_failures_are_checked_in_well_under_a_second_of_work():
    # The pairwise check took 44 s here; the sweep takes about 0.2 s. The bound is loose on purpose (shared CPUs).
    q = failure_queue(10_000)
    started = time.process_time()
    assert _failure_problems(q) == []
    assert sum(len(spans) for spans in down_spans(q).values()) == 10_000
    assert time.process_time() - started < 5.0


def test_the_failures_count_as_events():
    q = night([DeviceFailure(device="a", count=1, at_hours=1.0, repair_hours=1.0)] * 3)
    assert q.failure_events == 6


def test_a_night_posted_with_many_failures_is_checked_quickly_and_its_solve_time_is_the_planning_budget(make_app):
    # 1,000 failures took 6.9 s of the HTTP process (pairwise). Each failure and its repair is an event the night
    # re-plans at; the planning budget bounds the time all of them take (plan_night's budget_s, default 20 s up to
    # 150 jobs), so the worst-case solve time is that budget, one event solve's time limit and the bound's.
    client = make_app().test_client()
    queue = {"devices": [{"id": "g", "model": "A100-SXM", "count": 1000}],
             "jobs": [{"id": "a", "work_hours": 1.0, "parallel_fraction": 0.9}],
             "options": {"time_limit_s": 5.0},
             "failures": [{"device": "g", "count": 1, "at_hours": i / 100, "repair_hours": 1.0} for i in range(1000)]}
    body = {"queue": queue, "start": "2026-12-01T22:00", "hours": 12, "budget_s": 3_590.0}
    started = time.process_time()
    refused = client.post("/v1/night-plans", json=body)
    assert time.process_time() - started < 1.0
    assert refused.status_code == 422, refused.get_json()
    error = refused.get_json()["errors"][0]
    assert error["path"] == "budget_s" and "OPTSCHED_MAX_SOLVE_S" in error["message"]
    assert f"{3_590 + 5 + BOUND_TIME_LIMIT_S:,.0f} s" in error["message"]  # above the default 3,600 s
    started = time.process_time()
    assert client.post("/v1/night-plans", json={**body, "budget_s": 60.0}).status_code == 202
    assert time.process_time() - started < 1.0
