"""Shared fixtures: every plan a test produces goes through the independent verifier."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

import optsched
from optsched.verify.placement import verify

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


# The full suite is `make test` (CI); `make test-fast` (-m "not slow") is the inner loop, under a minute on 2 cores.
# Slow: real servers and worker processes, crash and load tests, the browser, and the larger planner runs.
SLOW_PARTS = ("tests/reliability/", "tests/scale/", "tests/api/test_api_server.py", "tests/api/test_api_browser.py",
              "tests/api/test_api_jobs.py", "tests/api/test_api_kinds.py", "tests/night/", "tests/test_time_limit.py",
              "tests/test_frontier.py", "tests/test_properties.py", "tests/queueing/test_queueing_simulation.py",
              "tests/test_large.py", "tests/hardening/test_server.py", "tests/hardening/test_generated_client.py",
              "tests/pages/test_pages_browser.py", "tests/outages/", "tests/test_rounding.py",
              "tests/replan/test_replan_demo.py")


def pytest_collection_modifyitems(config, items):
    root = str(config.rootpath) + "/"
    for item in items:
        where = str(item.path).removeprefix(root)
        if where.startswith(SLOW_PARTS):
            item.add_marker(pytest.mark.slow)
