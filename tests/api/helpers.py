"""Workloads and assertions shared by the REST service tests."""

from __future__ import annotations

import json
import time
from typing import Any

from optsched.schema.catalog import sample_workload_path
from optsched.verify.placement import verify
from tests.support.factories import device, job, workload


def tiny_workload(name: str = "t", **options: Any) -> dict[str, Any]:
    """Two jobs on four devices: solves in a few milliseconds."""
    data = workload(
        [device("g", "m", 3, [(100, 1.0), (200, 1.5)]), device("h", "n", 1, [(50, 0.5)])],
        [job("a", work=10, p=0.9, priority="high", deadline_hours=20), job("b", work=5, p=0.5)],
        power={"budget_w": 500},
        options={"time_limit_s": 10, **options},
    )
    data["name"] = name
    return data


def night_queue(name: str = "q") -> dict[str, Any]:
    """Two jobs on three devices, one after the other's release, a dependency and a power window: plans in ~0.1 s."""
    data = workload(
        [device("g", "m", 2, [(100, 1.0), (50, 0.5)], idle_w=5), device("h", "n", 1, [(80, 0.8)])],
        [
            job("prep", work=1, p=0.9, priority="high", deadline_hours=4),
            job("train", work=4, p=0.95, after=["prep"], release_hours=0.5, deadline_hours=8),
        ],
        power={"budget_w": 300, "windows": [{"from_hours": 2, "to_hours": 3, "budget_w": 200}]},
        options={"time_limit_s": 10},
    )
    data["name"] = name
    return data


def slow_workload(time_limit_s: float = 20) -> dict[str, Any]:
    """The shipped demo: about 2 s to optimal on this machine (less with a shorter time limit)."""
    data = json.loads(sample_workload_path("demo").read_text())
    data["options"] = {**data.get("options", {}), "time_limit_s": time_limit_s}
    return data


def assert_verified(data: dict[str, Any], resource: dict[str, Any]) -> None:
    """A finished plan resource carries a plan the independent verifier accepts."""
    assert resource["plan"] is not None, resource
    assert verify(data, resource["plan"]) == []


def drawn(client, url: str, timeout_s: float = 120.0, **kwargs: Any):
    """GET a chart the way the service asks a client to: a 503 (every drawing slot busy, or a drawing process
    slow to start on a busy machine) carries Retry-After, and the same GET is made again after it, until the
    deadline. Any other answer is returned as it is."""
    deadline = time.monotonic() + timeout_s
    while True:
        response = client.get(url, **kwargs)
        if response.status_code != 503 or time.monotonic() > deadline:
            return response
        time.sleep(min(float(response.headers.get("Retry-After", 1)), 5.0))


def solve_now(app, resource_id: str) -> dict:
    """Solve a stored resource of `app` in this process, as a worker would (for apps without a solver pool); its
    result document."""
    from api import services
    from optsched.infra.queue import SolveTask, record_outcome
    from optsched.service.kinds import RUNNER

    store = services(app).store
    claimed = store.claim(resource_id)
    outcome, payload = RUNNER.solve(SolveTask.of(claimed, threads=1))
    assert outcome == "result", payload
    record_outcome(store, resource_id, claimed.attempts, outcome, payload)
    return store.get(resource_id).plan
