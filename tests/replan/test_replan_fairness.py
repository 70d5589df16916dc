"""Re-planning under the fairness objectives: the max-min of the changed workload (exhaustive search), the move
cost weighed against the weighted speedup of the second solve, every plan verified."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import optsched
from optsched.model.objectives import TIE_BREAK_SHARE
from optsched.replan import moved_jobs
from optsched.schema.tolerances import FAIRNESS_TOLERANCE
from optsched.solve.incumbent import ABS_GAP, MIN_GAP
from tests.fair_oracle import fairness, max_min
from tests.replan.conftest import plan_checked, replan_checked
from tests.replan.test_replan_properties import changes
from tests.support.factories import device, job, tiny_workloads, workload

EXACT = {"time_limit_s": 20, "mip_gap": 1e-7}


def assert_fair(result) -> None:
    """The re-plan's fairness is within the tolerance of the changed workload's max-min (exhaustive search), and
    its net figures are in weighted-speedup units."""
    if not result.workload.jobs:
        return  # the change removed every job: nothing to share (the plan verified)
    best, found = max_min(result.workload.model_dump(mode="json"))
    if best is None:
        assert result.plan.status is optsched.Status.infeasible
        return
    plan = result.plan
    assert plan.status is optsched.Status.optimal, plan.warnings
    assert (1 - FAIRNESS_TOLERANCE) * best * (1 - 1e-6) <= plan.fairness <= best * (1 + 1e-6)
    assert plan.fairness == pytest.approx(fairness(
        result.workload.model_dump(mode="json"), found.solo, {p.job: p.speedup for p in plan.placements}))
    assert result.net_objective == pytest.approx(plan.weighted_speedup - result.move_cost)
    assert result.net_gap is not None and result.net_bound is not None
    assert abs(result.net_bound - result.net_objective) <= stop_gap(plan.weighted_speedup)


def stop_gap(weighted_speedup: float) -> float:
    """The widest gap, in weighted-speedup units, a solve may stop at (optsched.solve.incumbent): ABS_GAP, or
    MIN_GAP of the objective, widened by the tie-break term. Relative to the net objective (the weighted speedup
    less the move cost, which can be far smaller) the same gap can exceed MIN_GAP: 1.28e-6 was drawn once."""
    return (1 + TIE_BREAK_SHARE) * max(ABS_GAP, MIN_GAP * abs(weighted_speedup))


@pytest.mark.slow
@pytest.mark.parametrize("objective", ["max_min_speedup", "team_max_min"])
def test_a_failure_re_plans_to_the_new_max_min_moving_only_the_job_hit(objective):
    w = workload(
        [device("g", "m", 4, [(200, 2.0), (100, 1.0)]), device("k", "n", 3, [(100, 1.0)])],
        [job("a", p=0.9, team="x"), job("b", p=0.99, team="y"), job("c", p=0.5, team="y")],
        objective=objective, options=EXACT,
    )
    current = plan_checked(w)
    hit = {p.job for p in current.placements if any(a.device == "k" for a in p.allocations)}
    assert hit, "the failure must hit a running job"
    result = replan_checked(w, current, {"device_failures": [{"device": "k", "count": 1}]})
    assert_fair(result)
    assert set(moved_jobs(current, result.plan, result.workload)) <= hit
    assert result.move_cost > 0


@pytest.mark.slow
@given(st.data())
def test_random_changes_under_a_fairness_objective_reach_the_new_max_min(data):
    base = data.draw(tiny_workloads(max_jobs=3, max_groups=2, max_count=3))
    w = {**base, "objective": data.draw(st.sampled_from(["max_min_speedup", "team_max_min"])), "options": EXACT}
    current = plan_checked(w)
    if not current.feasible:
        return
    change = data.draw(changes(w, current))
    assert_fair(replan_checked(w, current, change))
