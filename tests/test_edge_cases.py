"""Edge cases of the contract, each asserted exactly."""

from __future__ import annotations

import pytest

from optsched import Status, Workload
from tests.conftest import plan_checked
from tests.support.factories import device, job, workload


def test_p_zero_uses_one_device_at_the_fastest_speed():
    # Serial job: S = s_host regardless of device count; more devices only cost power (tie-break).
    w = workload([device("g", "m", 4, [(100, 1.5)])], [job("a", p=0.0, priority="low")])
    result = plan_checked(w)
    assert result.placements[0].speedup == pytest.approx(1.5)
    assert sum(a.count for a in result.placements[0].allocations) == 1


def test_p_one_speedup_is_aggregate_speed():
    w = workload(
        [device("f", "fast", 2, [(300, 2.0)]), device("s", "slow", 3, [(100, 0.5)])], [job("a", p=1.0)]
    )
    result = plan_checked(w)
    assert result.placements[0].speedup == pytest.approx(2 * 2.0 + 3 * 0.5)


def test_single_device():
    w = workload([device("g", "m", 1, [(100, 1.0)])], [job("a", work=5, p=0.9, deadline_hours=5, priority="high")])
    result = plan_checked(w)
    assert result.status == Status.optimal
    assert result.placements[0].runtime_hours == pytest.approx(5.0)
    assert result.placements[0].meets_deadline is True


def test_no_budget_uses_every_useful_device():
    w = workload([device("g", "m", 3, [(300, 1.0), (100, 0.5)])], [job("a", p=1.0)])
    result = plan_checked(w)
    assert result.power_w == 900
    assert result.placements[0].speedup == pytest.approx(3.0)


def test_budget_below_idle_power_is_infeasible_with_the_numbers():
    w = workload([device("g", "m", 4, [(300, 1.0)], idle_w=50)], [job("a")], power={"budget_w": 150})
    result = plan_checked(w)
    assert result.status == Status.infeasible
    assert "200 W" in result.diagnosis[0] and "150 W" in result.diagnosis[0]


def test_every_device_ineligible_for_a_hard_job_names_the_memory():
    w = workload(
        [device("g", "m", 2, [(100, 1.0)], memory_gb=24)], [job("a", priority="critical", memory_gb=120)]
    )
    result = plan_checked(w)
    assert result.status == Status.infeasible
    assert "no device has 120 GB of memory" in result.diagnosis[0]


def test_every_device_ineligible_for_soft_jobs_is_an_empty_optimal_plan():
    w = workload([device("g", "m", 2, [(100, 1.0)])], [job("a", allowed_models=["other"])])
    result = plan_checked(w)
    assert result.status == Status.optimal
    assert result.objective == 0 and not result.placements[0].admitted
    assert any("matches no device" in warning for warning in result.warnings)


def test_hard_deadline_out_of_reach_reports_best_runtime():
    # Best: 2 devices at speed 1, p=1 -> S = 2, runtime 50 h > 10 h.
    w = workload([device("g", "m", 2, [(100, 1.0)])], [job("a", work=100, p=1.0, priority="high", deadline_hours=10)])
    result = plan_checked(w)
    assert result.status == Status.infeasible
    assert "best runtime 50 h > deadline 10 h" in result.diagnosis[0]


def test_hard_jobs_over_budget_say_by_how_much():
    # Both critical jobs need one 300 W device each (min 1); cheapest level 200 W -> 400 W > 300 W budget.
    w = workload(
        [device("g", "m", 2, [(300, 1.0), (200, 0.8)])],
        [job("a", priority="critical"), job("b", priority="critical")],
        power={"budget_w": 300},
    )
    result = plan_checked(w)
    assert result.status == Status.infeasible
    assert "need at least 400 W" in result.diagnosis[0] and "short by 100 W" in result.diagnosis[0]


def test_domain_budget_diagnosis_names_the_domain():
    w = workload(
        [device("a", "m", 2, [(300, 1.0)], domain="rack2")],
        [job("x", priority="high", min_devices=2)],
        power={"domains": {"rack2": 500}},
    )
    result = plan_checked(w)
    assert result.status == Status.infeasible
    assert "domain 'rack2'" in result.diagnosis[0] and "short by 100 W" in result.diagnosis[0]


def test_huge_work_hours_still_plans():
    w = workload([device("g", "m", 2, [(100, 1.0)])], [job("a", work=1e9, p=0.99)])
    result = plan_checked(w)
    assert result.status == Status.optimal
    assert result.placements[0].runtime_hours == pytest.approx(1e9 / (1 / (0.01 + 0.99 / 2)))


def test_speed_ties_are_broken_by_lower_power():
    # Two levels with the same speed: the cheaper one must be used (dominated level removed).
    w = workload([device("g", "m", 1, [(300, 1.0), (200, 1.0)])], [job("a", p=0.5)])
    result = plan_checked(w)
    assert result.placements[0].allocations[0].cap_w == 200
    assert result.power_w == 200


def test_idle_power_counts_for_unused_devices():
    w = workload([device("g", "m", 3, [(100, 1.0)], idle_w=10)], [job("a", p=0.0, priority="low")])
    result = plan_checked(w)
    assert result.power_w == 100 + 2 * 10


def test_no_jobs_is_an_empty_optimal_plan():
    result = plan_checked(workload([device("g", "m", 1, [(100, 1.0)], idle_w=5)], []))
    assert result.status == Status.optimal and result.objective == 0 and result.power_w == 5


def test_model_never_mutates_input():
    data = workload([device("g", "m", 2, [(100, 1.0)])], [job("a")], power={"budget_w": 1000})
    before = repr(data)
    w = Workload.load(data)
    plan_checked(w)
    assert repr(data) == before
    assert Workload.load(data) == w


@pytest.mark.slow
def test_demo_workload_plans_optimally_and_budget_binds():
    from optsched.schema.catalog import sample_workload_path

    with sample_workload_path("demo").open() as f:
        result = plan_checked(f.read())
    assert result.status == Status.optimal
    assert all(p.meets_deadline in (True, None) for p in result.placements if p.priority in ("critical", "high"))
    assert result.budget_w is not None and result.power_w > 0.95 * result.budget_w
