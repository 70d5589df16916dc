"""Shared fixtures: every plan a test produces goes through the independent verifier."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

import optsched
from optsched.verify.placement import verify

# The fast tier's rule, checked: `make test-durations` fails on a test over its limit that is not marked slow
# (pytester: tests/test_durations.py runs the check on a suite of its own).
pytest_plugins = ["tests.support.durations", "pytester"]

settings.register_profile(
    "default", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("thorough", max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "default"))


def plan_checked(workload, **kwargs) -> optsched.Plan:
    """Plan and assert the verifier finds nothing wrong with the result."""
    result = optsched.plan(workload, **kwargs)
    problems = verify(workload, result)
    assert problems == [], problems
    if result.status in (optsched.Status.infeasible,):
        assert result.diagnosis, "an infeasible plan must say why"
    return result


@pytest.fixture
def checked():
    return plan_checked
