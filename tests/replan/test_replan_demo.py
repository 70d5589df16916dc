"""The demo fleet loses 3 of the 8 A100s in a100-r1 (llm-finetune held all 8): the re-plan against planning afresh."""

from __future__ import annotations

from pathlib import Path

import pytest

import optsched
from optsched.replan import ChangeKind, Reason, move_costs, moved_jobs
from optsched.replan.replan import group_counts
from tests.replan.conftest import plan_checked, replan_checked

pytestmark = pytest.mark.slow  # the demo workload planned and re-planned

DEMO = Path(__file__).resolve().parents[2] / "models" / "workloads" / "demo.json"
FAILURE = {"device_failures": [{"device": "a100-r1", "count": 3}]}


@pytest.fixture(scope="module")
def demo():
    workload = optsched.Workload.load(DEMO)
    return workload, plan_checked(workload)


@pytest.fixture(scope="module")
def after_failure(demo):
    workload, current = demo
    result = replan_checked(workload, current, FAILURE)
    fresh = plan_checked(result.workload)
    return result, fresh


def test_failure_replan_verifies_on_the_smaller_fleet(demo, after_failure):
    workload, current = demo
    result, _ = after_failure
    assert {g.id: g.count for g in result.workload.devices}["a100-r1"] == 5
    assert {g.id: g.count for g in workload.devices}["a100-r1"] == 8  # the input is untouched
    assert result.plan.status is optsched.Status.optimal
    # The current plan uses all 8 devices of a100-r1, so some job there must give up 3; one job holds at least 3
    # (llm-finetune: 7 or 8, depending on how the planner breaks a tie), so one move is enough, and the re-plan
    # makes just that one, on a100-r1, for the failure.
    used = {p.job: sum(a.count for a in p.allocations if a.device == "a100-r1") for p in current.placements}
    assert sum(used.values()) == 8 and max(used.values()) >= 3
    moved = moved_jobs(current, result.plan, result.workload)
    assert len(moved) == 1 and used[moved[0]] >= 3
    change = next(c for c in result.changes if c.job == moved[0])
    assert change.kind in (ChangeKind.resized, ChangeKind.moved)
    assert change.reason is Reason.failed_device and "a100-r1" in change.detail
    assert result.moved == 1 and result.restart_hours == pytest.approx(0.25)
    assert all(c.kind in (ChangeKind.kept, ChangeKind.recapped) for c in result.changes if c.job != moved[0])


def test_failure_replan_moves_no_more_than_fresh_and_keeps_95_percent(demo, after_failure):
    _, current = demo
    result, fresh = after_failure
    fresh_moves = moved_jobs(current, fresh, result.workload)
    assert result.moved <= len(fresh_moves)
    assert len(fresh_moves) >= 2  # planning afresh reshuffles jobs the failure did not touch (4 when measured)
    assert result.plan.objective >= 0.95 * fresh.objective


def test_failure_replan_beats_fresh_on_the_net_objective(demo, after_failure):
    """Planning afresh is one of the plans the re-plan chooses from: net of the same move cost it cannot win."""
    _, current = demo
    result, fresh = after_failure
    costs = move_costs(result.workload, current, result.move_cost_hours)
    fresh_net = fresh.objective - sum(costs[j] for j in moved_jobs(current, fresh, result.workload))
    gap = result.workload.options.mip_gap
    assert result.net_objective >= fresh_net * (1 - 2 * gap) - 1e-6
    assert result.net_objective == pytest.approx(result.plan.objective - result.move_cost)
    assert result.net_bound is not None and result.net_bound >= result.net_objective - 1e-6


def test_result_serialises_to_json(after_failure):
    result, _ = after_failure
    document = result.model_dump(mode="json")
    assert document["plan"]["status"] == "optimal"
    assert {c["kind"] for c in document["changes"]} <= {k.value for k in ChangeKind}
    assert optsched.Replan.model_validate(document) == result


def test_pinned_jobs_stay_unless_the_failure_took_their_devices(demo):
    """Pin every running job: those off a100-r1 must keep their device groups and counts; a pin on a100-r1 that
    no longer fits in its 5 devices is dropped and said so, not silently broken."""
    workload, current = demo
    running = {p.job: p.allocations for p in current.placements if p.admitted}
    result = replan_checked(workload, current, {**FAILURE, "pin": sorted(running)})
    assert result.plan.status is optsched.Status.optimal
    impossible = {b.job: b.reason for b in result.pins_impossible}
    after = {p.job: p.allocations for p in result.plan.placements if p.admitted}
    on_failed = {j for j, allocs in running.items() if any(a.device == "a100-r1" for a in allocs)}
    for job_id, allocs in running.items():
        change = next(c for c in result.changes if c.job == job_id)
        assert change.pinned
        if job_id in impossible:
            assert job_id in on_failed and "a100-r1" in impossible[job_id]
            assert any(f"pin of job {job_id!r} impossible" in w for w in result.plan.warnings)
        else:
            assert group_counts(after.get(job_id, ())) == group_counts(allocs), job_id
            assert change.kind in (ChangeKind.kept, ChangeKind.recapped) and change.restart_hours == 0
    assert set(running) - on_failed and set(running) - on_failed <= set(running) - set(impossible)
    assert 1 <= len(impossible) and result.moved == len(impossible)


def test_the_sample_change_in_models_replans_the_demo_keeping_the_pinned_job(demo):
    """models/changes/demo-failure.json, as the README's re-planning example uses it."""
    workload, current = demo
    sample = DEMO.parents[1] / "changes" / "demo-failure.json"
    result = replan_checked(workload, current, sample, move_cost_hours=0.5)
    assert result.plan.feasible and result.pins_impossible == ()
    pinned = next(c for c in result.changes if c.job == "llm-pretrain")
    assert pinned.pinned and group_counts(pinned.before) == group_counts(pinned.after)
    assert result.restart_hours == pytest.approx(0.5 * result.moved) and result.moved >= 1
