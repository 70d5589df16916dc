"""Promise 2: every plan is feasible, and no baseline beats a plan reported `optimal`.

Hypothesis generates workloads with every feature on at random (tests.support.factories.tiny_workloads: priorities,
deadlines, memory, allowed models, speed_on, fleet and domain budgets, both objectives), larger than the
exhaustive oracle can check. Each plan goes through the independent verifier; every baseline registered in
optsched.baselines.BASELINES runs on the same workload and must verify too; an `optimal` plan must be at least
as good as each feasible baseline (within the requested gap), and an `infeasible` verdict must not be
contradicted by a baseline that found a valid plan. CI runs 200 workloads; `python -m bench.reliability
feasible` runs 1,000 and records the figure.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, event, given, settings

from optsched.baselines import BASELINES
from optsched.testing.feasibility import check_plan_and_baselines
from tests.support.factories import tiny_workloads

pytestmark = pytest.mark.slow  # real servers and solver processes, at CI's budgets

EXAMPLES = int(os.environ.get("OPTSCHED_FEASIBLE_EXAMPLES", "200"))


@given(workload=tiny_workloads(max_jobs=6, max_groups=3, max_count=6))
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_every_plan_verifies_and_no_baseline_beats_an_optimal_plan(workload):
    plan, baselines = check_plan_and_baselines(workload)
    assert set(baselines) == set(BASELINES)
    event(f"{workload['objective']}: {plan.status.value}")
