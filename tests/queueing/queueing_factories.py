"""Small study documents for the queueing tests: one pool of a made-up model whose speed is 1.0 at the top cap,
so that with one device per job a class's service mean is its work mean."""

from __future__ import annotations

from typing import Any

LEVELS = [(100.0, 1.0), (60.0, 0.8)]


def klass(
    name: str,
    priority: str,
    rate: float,
    mean: float,
    scv: float = 1.0,
    *,
    cap_w: float | None = 100.0,
    p: float = 0.5,
    d: int = 1,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": name,
        "priority": priority,
        "arrival_rate_per_hour": rate,
        "work_hours": {"mean": mean, "scv": scv},
        "parallel_fraction": p,
        "devices_per_job": d,
    }
    if cap_w is not None:
        out["cap_w"] = cap_w
    return out


def study(
    classes: list[dict[str, Any]],
    *,
    servers: int = 1,
    discipline: str = "non_preemptive",
    targets: dict[str, float] | None = None,
    levels: list[tuple[float, float]] = LEVELS,
    idle_w: float = 10.0,
    count: int | None = None,
) -> dict[str, Any]:
    return {
        "name": "t",
        "discipline": discipline,
        "devices": [
            {
                "id": "pool",
                "model": "toy",
                "count": count if count is not None else servers,
                "idle_w": idle_w,
                "power_levels": [{"cap_w": cap, "speed": speed} for cap, speed in levels],
            }
        ],
        "classes": classes,
        "targets": {k: {"mean_response_hours": v} for k, v in (targets or {}).items()},
    }
