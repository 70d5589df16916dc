"""Examples in the served OpenAPI document: one valid request per operation (so that a client generator, a
documentation page or a fuzzer's examples phase has something real to send), keyed by operationId.

The server accepts each body here (tests/hardening/test_generated_client.py posts every one); ids in path
examples are well-formed but unknown, so they answer 404 as documented.
"""

from __future__ import annotations

import copy
from typing import Any

from optsched.infra.store import CURSOR_PATTERN

WORKLOAD: dict[str, Any] = {
    "name": "example",
    "devices": [{"id": "rack1", "model": "A100-SXM", "count": 4, "domain": "row1"}],
    "jobs": [
        {"id": "train", "work_hours": 12.0, "parallel_fraction": 0.95, "priority": "high", "deadline_hours": 8.0},
        {"id": "eval", "work_hours": 2.0, "parallel_fraction": 0.5},
    ],
    "power": {"budget_w": 2500.0, "domains": {"row1": 2500.0}},
    "options": {"time_limit_s": 5.0},
}

NIGHT_QUEUE: dict[str, Any] = {
    "name": "example-night",
    "devices": [{"id": "rack1", "model": "A100-SXM", "count": 4}],
    "jobs": [
        {"id": "prep", "work_hours": 1.0, "parallel_fraction": 0.5},
        {"id": "train", "work_hours": 6.0, "parallel_fraction": 0.9, "after": ["prep"], "deadline_hours": 6.0,
         "priority": "high"},
        {"id": "sweep", "work_hours": 2.0, "parallel_fraction": 0.8, "release_hours": 1.0},
    ],
    "power": {"budget_w": 2000.0, "windows": [{"from_hours": 2.0, "to_hours": 4.0, "budget_w": 1200.0}]},
    "options": {"time_limit_s": 2.0},
}

# A plan for WORKLOAD as the planner writes it (POST /v1/verify lists what it breaks, if anything).
PLAN: dict[str, Any] = {
    "workload": "example",
    "objective_name": "weighted_speedup",
    "status": "heuristic",
    "objective": None,
    "bound": None,
    "gap": None,
    "solve_seconds": 0.0,
    "weighted_speedup": 0.0,
    "power_w": 0.0,
    "placements": [
        {
            "job": "train",
            "priority": "high",
            "admitted": True,
            "speedup": 2.105,
            "runtime_hours": 5.7,
            "deadline_hours": 8.0,
            "meets_deadline": True,
            "allocations": [{"device": "rack1", "count": 3, "cap_w": 400.0, "speed": 1.0, "work_fraction": 0.333}],
        },
        {
            "job": "eval",
            "priority": "normal",
            "admitted": True,
            "speedup": 1.0,
            "runtime_hours": 2.0,
            "meets_deadline": None,
            "allocations": [{"device": "rack1", "count": 1, "cap_w": 400.0, "speed": 1.0, "work_fraction": 1.0}],
        },
    ],
}

QUEUEING_STUDY: dict[str, Any] = {
    "name": "example-study",
    "discipline": "preemptive",
    "devices": [{"id": "rack-a", "model": "A100-SXM", "count": 8}],
    "classes": [
        {"name": "finetunes", "priority": "high", "arrival_rate_per_hour": 1.0,
         "work_hours": {"mean": 2.0, "scv": 1.0}, "parallel_fraction": 0.9, "devices_per_job": 2},
        {"name": "experiments", "priority": "normal", "arrival_rate_per_hour": 1.0,
         "work_hours": {"mean": 2.0, "scv": 1.0}, "parallel_fraction": 0.8, "devices_per_job": 2},
    ],
}

UNKNOWN_ID = "0123456789abcdef0123456789abcdef"

# operationId -> request body example.
BODIES: dict[str, Any] = {
    "createPlan": WORKLOAD,
    "createNightPlan": {"queue": NIGHT_QUEUE, "start": "2026-12-01T22:00", "hours": 8.0, "preempt": False},
    "createFrontier": {"workload": WORKLOAD, "budgets": [1200.0, 1800.0, 2500.0]},
    "verifyPlan": {"workload": WORKLOAD, "plan": PLAN},
    "createQueueingStudy": {"study": QUEUEING_STUDY, "method": "analytic"},
    "createReplan": {"budget_w": 2000.0, "pin": ["train"]},
}

# Parameter name -> example value (every id parameter, the list's query and the request headers).
PARAMETERS: dict[str, Any] = {
    "limit": 20,
    "Prefer": "respond-async",
}


def add_examples(spec: dict[str, Any]) -> None:
    """Set an example on every request body and parameter of `spec` (in place); a parameter not listed in
    PARAMETERS gets the first value of its enum, or a value of its pattern's shape (the cursor)."""
    for path, item in spec.get("paths", {}).items():
        for operation in item.values():
            body = BODIES.get(operation.get("operationId", ""))
            content = operation.get("requestBody", {}).get("content", {}).get("application/json")
            if body is not None and content is not None:
                content["example"] = copy.deepcopy(body)
            for parameter in operation.get("parameters", []):
                name = parameter.get("name", "")
                if name == "Idempotency-Key":  # one key per operation: a key names one request
                    parameter["example"] = f"example-{operation.get('operationId', path)}"
                elif name in PARAMETERS:
                    parameter["example"] = PARAMETERS[name]
                elif parameter.get("in") == "path" and name.endswith("_id"):
                    parameter["example"] = UNKNOWN_ID
                else:
                    value = _from_schema(parameter.get("schema", {}), spec)
                    if value is not None:
                        parameter["example"] = value


def _from_schema(schema: dict[str, Any], spec: dict[str, Any]) -> Any:
    for option in (schema, *schema.get("anyOf", [])):
        if "$ref" in option:
            option = spec["components"]["schemas"].get(option["$ref"].rsplit("/", 1)[-1], {})
        if option.get("enum"):
            return option["enum"][0]
        if option.get("pattern") == CURSOR_PATTERN:
            return f"1764626400000000-{UNKNOWN_ID}"
    return None
