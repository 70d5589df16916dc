"""Randomized workloads, larger than the oracle can check: every plan verifies, statuses are consistent."""

from __future__ import annotations

import pytest
from hypothesis import given

from optsched import Status
from tests.conftest import plan_checked
from tests.support.factories import tiny_workloads


@pytest.mark.slow
@given(tiny_workloads(max_jobs=8, max_groups=3, max_count=8))
def test_every_plan_verifies_and_status_is_consistent(w):
    result = plan_checked(w)
    assert result.status in set(Status)
    if result.status == Status.optimal:
        assert result.gap is not None and result.bound is not None
        # Requested gap 1e-7 is below the solver's tolerances, which the planner treats as 1e-6.
        assert result.gap <= 1.1e-6 or abs(result.bound - result.objective) <= 1e-6
    if result.status == Status.infeasible:
        assert result.diagnosis and not any(p.admitted for p in result.placements)
    else:
        assert not result.diagnosis


@pytest.mark.parametrize(
    "power", [{"budget_w": 20.0}, {}], ids=["no device fits the budget", "no device meets the deadline"]
)
def test_a_workload_where_nothing_fits_is_proven_at_zero(power):
    """The falsifying shape hypothesis found: the solver's bound + eps x peak power (the tie-break's room) read as a
    gap of 1,200 under status optimal; no plan admits a job, so the bound is the empty plan's 0."""
    job_extra = {} if power else {"deadline_hours": 4.9}  # 10 h of work at speed 2: 5 h
    w = {
        "name": "t",
        "devices": [{"id": "g0", "model": "fast", "count": 1, "idle_w": 10.0,
                     "power_levels": [{"cap_w": 50.0, "speed": 2.0}]}],
        "jobs": [{"id": "j0", "work_hours": 10.0, "parallel_fraction": 0.0, "weight": 6.0, **job_extra}],
        "power": power,
        "options": {"mip_gap": 1e-7},
    }
    result = plan_checked(w)
    assert result.status == Status.optimal
    assert result.objective == 0.0 and result.bound == 0.0 and result.gap == 0.0
    # With room in the budget, or without the deadline, the job runs and the bound is the solver's again.
    w["power"] = {"budget_w": 60.0} if power else {}
    w["jobs"][0].pop("deadline_hours", None)
    result = plan_checked(w)
    # normal priority (2) x weight 6 x speed 2
    assert result.status == Status.optimal and result.objective == pytest.approx(24.0)
    assert result.bound >= result.objective and result.gap <= 1.1e-6
