"""Shared fixtures: every plan a test produces goes through the independent verifier."""

from __future__ import annotations

import os
from collections import Counter

import pytest
from hypothesis import HealthCheck, settings

import optsched
from optsched.verify.placement import verify

# The fast tier's rule, checked: `make test-durations` fails on a test over its limit that is not marked slow
# (pytester: tests/test_durations.py runs the check on a suite of its own); under `make test` a skipped test fails;
# the app and server fixtures of the REST, hardening and reliability tests.
pytest_plugins = ["tests.support.durations", "tests.support.no_skips", "pytester", "tests.support.apps"]

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


# Under `make test`'s two processes these run in one of them, one after another: each starts a deployment of its own
# (worker pools, Redis, PostgreSQL databases, a Slurm cluster on fixed ports) and times its leases and restarts.
SERIAL = ("tests/scale/", "tests/outages/", "tests/slurm/", "tests/hardening/test_cancel_and_queue.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the SERIAL tests as one xdist group and collect them first: the group is the longest unit of work, and
    started last it would leave the other process idle."""
    root = config.rootpath

    def serial(item: pytest.Item) -> bool:
        return item.path.is_relative_to(root) and item.path.relative_to(root).as_posix().startswith(SERIAL)

    if hasattr(config, "workerinput"):  # an xdist process: its grouped scheduling runs one item per node id
        shared = [nodeid for nodeid, n in Counter(item.nodeid for item in items).items() if n > 1]
        if shared:
            raise pytest.UsageError(f"items share node ids (run them outside xdist, Makefile SHARED_IDS): {shared}")
    for item in items:
        if serial(item):
            item.add_marker(pytest.mark.xdist_group("services"))
    items.sort(key=lambda item: not serial(item))  # stable: each part keeps its order


@pytest.fixture
def checked():
    return plan_checked
