"""Promise 2's check for one workload: the plan verifies, and no baseline beats an `optimal` plan.

Shared by tests/reliability/test_feasible.py (CI: 100 workloads) and bench/reliability.py (1,000).
"""

from __future__ import annotations

from typing import Any

import optsched
from optsched.baselines import BASELINES
from optsched.model.data import ModelData
from optsched.model.objectives import OBJECTIVES, fairness_value
from optsched.schema.plan import Plan, Status
from optsched.schema.workload import Workload
from optsched.solve.incumbent import MIN_GAP

# Objectives are sums of speedups or watts of order 1-1000; this absorbs float noise in the recomputation.
ABS_TOL = 1e-6


def check_plan_and_baselines(document: dict[str, Any]) -> tuple[Plan, dict[str, Plan]]:
    """Plan, verify, run every baseline, verify each; then compare (see the module docstring). Returns them."""
    plan = optsched.plan(document)
    assert optsched.verify(document, plan) == [], (plan.status, optsched.verify(document, plan))
    baselines = {name: baseline(document) for name, baseline in BASELINES.items()}
    for name, result in baselines.items():
        assert optsched.verify(document, result) == [], (name, optsched.verify(document, result))
    feasible = {name: result for name, result in baselines.items() if result.feasible}
    if plan.status == Status.infeasible:
        # A baseline plan the verifier accepts would prove the workload feasible.
        assert not feasible, f"the planner says infeasible, but {sorted(feasible)} found a valid plan"
    if plan.status == Status.optimal:
        assert plan.bound is not None, "an optimal plan reports its bound"
        workload = Workload.load(document)
        gap = max(workload.options.mip_gap, MIN_GAP)
        for name, result in feasible.items():
            if OBJECTIVES[workload.objective].fair:
                # A baseline normalises by its own solo speedups: rank it on the plan's.
                solo = ModelData(workload, solo=tuple(p.solo_speedup or 0.0 for p in plan.placements))
                value = fairness_value(solo, [p.speedup for p in result.placements])
                assert value <= plan.bound + ABS_TOL * max(1.0, abs(plan.bound)), (name, value, plan.bound)
            elif workload.objective == "weighted_speedup":
                limit = min(plan.bound, plan.weighted_speedup * (1 + gap)) + ABS_TOL * max(1.0, abs(plan.bound))
                assert result.weighted_speedup <= limit, (name, result.weighted_speedup, plan.weighted_speedup)
            else:  # min_power: every job admitted at the least power
                limit = max(plan.bound, plan.power_w * (1 - gap)) - ABS_TOL * max(1.0, abs(plan.power_w))
                assert result.power_w >= limit, (name, result.power_w, plan.power_w)
    return plan, baselines
