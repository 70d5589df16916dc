"""Every timeline a night test produces goes through the independent timeline verifier."""

from __future__ import annotations

from datetime import datetime

import pytest

from optsched.baselines import conservative, easy, edf, fifo
from optsched.night import NightPlan, plan_night
from optsched.verify.timeline import verify_timeline

START = datetime(2026, 12, 1, 22, 0)
POLICIES = {"planner": plan_night, "fifo": fifo, "edf": edf, "easy": easy, "conservative": conservative}


def night_checked(queue, policy: str = "planner", *, hours: float = 8.0, **kwargs) -> NightPlan:
    """Plan the night with `policy` and assert the timeline verifier finds nothing wrong."""
    result = POLICIES[policy](queue, start=START, hours=hours, **kwargs)
    problems = verify_timeline(queue, result)
    assert problems == [], problems
    return result


@pytest.fixture
def night():
    return night_checked
