"""Time limits are honoured: a hard instance asked for 2 s comes back by about 3 s with a verified plan."""

from __future__ import annotations

import time

from optsched.testing.instances import generate
from optsched import Status
from tests.conftest import plan_checked


def test_two_second_limit_returns_the_best_plan_found_by_about_three_seconds():
    # A 60-job instance at gap 0: plans come quickly, the proof does not; the deadline must stop the search.
    workload = generate("T", 0, options={"time_limit_s": 2.0, "mip_gap": 0.0})
    start = time.monotonic()
    result = plan_checked(workload)
    elapsed = time.monotonic() - start
    assert elapsed <= 3.5, elapsed
    assert result.status == Status.time_limit
    assert result.gap is not None and result.gap > 0 and result.bound >= result.objective
