"""Re-plan tests: every re-plan goes through the independent verifier against the changed workload."""

from __future__ import annotations

import pytest

import optsched
from optsched.replan import Replan, replan
from optsched.verify.placement import verify


def replan_checked(workload, plan, change, **kwargs) -> Replan:
    """Re-plan and assert the new plan verifies on the changed workload (an infeasible one must say why and what
    would help)."""
    result = replan(workload, plan, change, **kwargs)
    problems = verify(result.workload, result.plan)
    assert problems == [], problems
    if result.plan.status is optsched.Status.infeasible:
        assert result.plan.diagnosis and result.plan.suggestions
        assert result.changes == () and result.moved == 0
    return result


def plan_checked(workload, **kwargs) -> optsched.Plan:
    result = optsched.plan(workload, **kwargs)
    assert verify(workload, result) == []
    return result


@pytest.fixture
def rechecked():
    return replan_checked
