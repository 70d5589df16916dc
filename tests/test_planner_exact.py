"""The planner against exhaustive search on tiny workloads: same optimum (1e-4 relative), same feasibility."""

from __future__ import annotations

import pytest
from hypothesis import given

import optsched
from optsched import Status
from tests.conftest import plan_checked
from tests.oracle import brute_force
from tests.support.factories import device, job, tiny_workloads, workload


def assert_matches_oracle(w) -> optsched.Plan:
    expected, _ = brute_force(w)
    result = plan_checked(w)
    if expected is None:
        assert result.status == Status.infeasible, (result.status, result.objective)
    else:
        assert result.status == Status.optimal, result
        assert result.objective == pytest.approx(expected, rel=1e-4, abs=1e-6)
    return result


@pytest.mark.slow
@given(tiny_workloads())
def test_random_tiny_workloads_match_exhaustive_search(w):
    assert_matches_oracle(w)


def test_hand_computed_optimum_two_jobs_share_four_devices():
    # Two p=0.5 jobs, 4 identical speed-1 devices, no budget. One job on k devices: S = 1/(0.5 + 0.5/k).
    # Splits: (1,3) -> 1 + 1.5 = 2.5, (2,2) -> 4/3 + 4/3 = 2.667, (0,4) -> 1.6.  Optimum (2,2): 8/3.
    w = workload([device("g", "m", 4, [(100, 1.0)])], [job("a", p=0.5), job("b", p=0.5)])
    result = assert_matches_oracle(w)
    assert result.objective == pytest.approx(2 * 2 * 4 / 3)  # normal priority weight 2
    assert [sum(a.count for a in p.allocations) for p in result.placements] == [2, 2]


def test_budget_forces_lower_cap_or_fewer_devices():
    # 2 devices: (200 W, 1.0) or (100 W, 0.8); budget 250 W. p=1 job: S = R.
    # Options: one at 200 (S=1.0, 200 W), two at 100 (S=1.6, 200 W), 200+... (300 W over budget). Best 1.6.
    w = workload(
        [device("g", "m", 2, [(200, 1.0), (100, 0.8)])],
        [job("a", p=1.0, priority="low")],
        power={"budget_w": 250},
    )
    result = assert_matches_oracle(w)
    assert result.objective == pytest.approx(1.6)
    assert result.power_w == 200


def test_min_power_objective_matches_exhaustive_search():
    w = workload(
        [device("g", "m", 3, [(300, 2.0), (150, 1.0)], idle_w=20)],
        [job("a", work=10, p=0.9, deadline_hours=4)],
        objective="min_power",
    )
    assert_matches_oracle(w)


def test_infeasible_when_hard_deadlines_compete_for_devices():
    # Each job alone meets its 6 h deadline only with both devices; together they cannot.
    w = workload(
        [device("g", "m", 2, [(100, 1.0)])],
        [
            job("a", work=10, p=1.0, priority="high", deadline_hours=6),
            job("b", work=10, p=1.0, priority="critical", deadline_hours=6),
        ],
    )
    result = assert_matches_oracle(w)
    assert result.status == Status.infeasible
    assert any("cannot all be placed" in reason for reason in result.diagnosis)


@pytest.mark.slow
@given(tiny_workloads(max_jobs=5, max_groups=3, max_count=5))
def test_pyomo_and_highs_backends_reach_the_same_optimum(w):
    direct = plan_checked(w, backend="highs")
    via_pyomo = plan_checked(w, backend="pyomo")
    assert direct.status == via_pyomo.status
    if direct.objective is not None:
        assert direct.objective == pytest.approx(via_pyomo.objective, rel=1e-5, abs=1e-6)
