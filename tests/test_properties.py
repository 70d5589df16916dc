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
