"""Pinning, the kinds of change and their restart hours, on workloads small enough to reason about by hand.

Two groups: `fast` (speed 4) and `slow` (speed 1, or 0.9 at 80 W). Job `a` runs on slow x2 in the current plan
(planned while only the slow model was allowed); re-planned with both models allowed, fast x2 is far better."""

from __future__ import annotations

import pytest

from optsched.replan import ChangeKind, Reason
from tests.replan.conftest import plan_checked, replan_checked
from tests.support.factories import device, job, workload


def fleet(fast_speed=4.0):
    return [device("fast", "fast", 2, [(200.0, fast_speed)]), device("slow", "slow", 2, [(100.0, 1.0), (80.0, 0.9)])]


def current_and_workload(power=None, fast_speed=4.0):
    devices = fleet(fast_speed)
    full = workload(devices, [job("a", work=10.0, p=0.99, max_devices=2)], power=power or {})
    only_slow = workload(devices, [job("a", work=10.0, p=0.99, max_devices=2, allowed_models=["slow"])],
                         power=power or {})
    current = plan_checked(only_slow)
    assert [(a.device, a.count) for a in current.placements[0].allocations] == [("slow", 2)]
    return full, current


def change_of(result, job_id):
    return next(c for c in result.changes if c.job == job_id)


def test_unpinned_job_moves_to_the_better_devices():
    full, current = current_and_workload()
    result = replan_checked(full, current, {})
    a = change_of(result, "a")
    assert a.kind is ChangeKind.moved and a.reason is Reason.better_use
    assert [(x.device, x.count) for x in a.after] == [("fast", 2)]
    assert result.moved == 1 and a.restart_hours == 0.25 and result.restart_hours == 0.25
    # pi = w S h / (T + h): w = 2 (normal), S = 1 / (0.01 + 0.99 / 2), T = 10 / S, h = 0.25.
    s = 1 / (0.01 + 0.99 / 2)
    assert result.move_cost == pytest.approx(2 * s * 0.25 / (10 / s + 0.25))


def test_pinned_job_keeps_its_devices():
    full, current = current_and_workload()
    result = replan_checked(full, current, {"pin": ["a"]})
    a = change_of(result, "a")
    assert a.kind is ChangeKind.kept and a.reason is Reason.pinned and a.pinned
    assert [(x.device, x.count) for x in a.after] == [("slow", 2)]
    assert result.moved == 0 and result.restart_hours == 0 and result.pins_impossible == ()


def test_a_small_gain_does_not_pay_for_the_move():
    # fast at 1.02: moving gains 2 x (S(1.02) - S(1.0)) = 0.078, the move costs pi = 0.187 (h = 0.25 h): kept.
    full, current = current_and_workload(fast_speed=1.02)
    result = replan_checked(full, current, {})
    assert change_of(result, "a").kind is ChangeKind.kept and result.moved == 0
    # Free moves (h = 0): the same change moves it, as planning afresh would.
    free = replan_checked(full, current, {}, move_cost_hours=0)
    assert change_of(free, "a").kind is ChangeKind.moved


def test_zero_move_cost_plans_as_afresh():
    full, current = current_and_workload()
    result = replan_checked(full, current, {}, move_cost_hours=0)
    assert change_of(result, "a").kind is ChangeKind.moved and result.move_cost == 0
    assert result.restart_hours == 0


def test_pin_impossible_after_its_devices_failed_is_reported():
    full, current = current_and_workload()
    result = replan_checked(full, current, {"device_failures": [{"device": "slow", "count": 1}], "pin": ["a"]})
    assert [b.job for b in result.pins_impossible] == ["a"]
    assert "'slow' has 1 devices left; it held 2" in result.pins_impossible[0].reason
    assert any("pin of job 'a' impossible" in w for w in result.plan.warnings)
    a = change_of(result, "a")
    assert a.pinned and a.kind is ChangeKind.moved and a.reason is Reason.failed_device


def test_pin_impossible_under_the_budget_is_reported_and_the_job_shrinks():
    # slow x2 draws at least 160 W and fast 200 W per device: under 150 W only one slow device fits.
    full, current = current_and_workload(power={"budget_w": 1000})
    result = replan_checked(full, current, {"budget_w": 150, "pin": ["a"]})
    assert [b.job for b in result.pins_impossible] == ["a"]
    assert "budgets" in result.pins_impossible[0].reason
    a = change_of(result, "a")
    assert a.kind is ChangeKind.resized and a.reason is Reason.budget
    assert [(x.device, x.count) for x in a.after] == [("slow", 1)]


def test_recap_is_not_a_move():
    slow = workload(fleet()[1:], [job("a", work=10.0, p=0.99, max_devices=2)], power={"budget_w": 1000})
    current = plan_checked(slow)
    result = replan_checked(slow, current, {"budget_w": 170})
    a = change_of(result, "a")
    # 2 x 100 W no longer fits; 100 + 80 W neither; 2 x 80 W does, on the same two devices.
    assert [(x.device, x.count, x.cap_w) for x in a.after] == [("slow", 2, 80.0)]
    assert a.kind is ChangeKind.recapped and a.restart_hours == 0 and result.moved == 0
    assert a.reason is Reason.budget and "170 W" in a.detail


def test_started_stopped_and_removed_jobs():
    devices = fleet()
    base = workload(devices, [job("a", p=0.99, max_devices=2), job("b", p=0.5, max_devices=1, priority="low")])
    current = plan_checked(base)
    running = {p.job for p in current.placements if p.admitted}
    assert running == {"a", "b"}
    change = {"remove_jobs": ["b"], "add_jobs": [job("c", p=0.9, priority="high", deadline_hours=10.0)]}
    result = replan_checked(base, current, change)
    kinds = {c.job: (c.kind, c.reason) for c in result.changes}
    assert kinds["b"] == (ChangeKind.stopped, Reason.removed)
    assert kinds["c"] == (ChangeKind.started, Reason.added)
    assert change_of(result, "b").restart_hours == 0  # removing a job is the change's doing, not a move
    assert result.moved == sum(
        1 for c in result.changes if c.job == "a" and c.kind not in (ChangeKind.kept, ChangeKind.recapped)
    )
