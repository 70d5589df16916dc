"""Small workload builders and hypothesis strategies for tests."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import strategies as st

from optsched.schema.night import DeviceFailure, NightQueue
from optsched.schema.workload import DeviceGroup, PowerLevel

MODELS = ("fast", "mid", "slow")


def device(id: str, model: str, count: int, levels: list[tuple[float, float]], **extra: Any) -> dict[str, Any]:
    return {
        "id": id,
        "model": model,
        "count": count,
        "power_levels": [{"cap_w": c, "speed": s} for c, s in levels],
        **extra,
    }


def job(id: str, work: float = 10.0, p: float = 0.9, **extra: Any) -> dict[str, Any]:
    return {"id": id, "work_hours": work, "parallel_fraction": p, **extra}


def workload(devices, jobs, **extra: Any) -> dict[str, Any]:
    return {"name": "t", "devices": devices, "jobs": jobs, **extra}


@st.composite
def levels(draw) -> list[tuple[float, float]]:
    n = draw(st.integers(1, 2))
    caps = sorted(
        draw(st.lists(st.sampled_from([50.0, 100.0, 150.0, 200.0, 300.0]), min_size=n, max_size=n, unique=True))
    )
    speeds = sorted(draw(st.lists(st.sampled_from([0.5, 0.7, 1.0, 1.3, 2.0]), min_size=n, max_size=n)))
    return list(zip(caps, speeds, strict=True))


@st.composite
def tiny_workloads(draw, max_jobs: int = 3, max_groups: int = 2, max_count: int = 3) -> dict[str, Any]:
    """Workloads small enough for the brute-force oracle, with every feature switched on at random."""
    n_groups = draw(st.integers(1, max_groups))
    devices = []
    for g in range(n_groups):
        extra: dict[str, Any] = {"idle_w": draw(st.sampled_from([0.0, 10.0, 30.0]))}
        if draw(st.booleans()):
            extra["domain"] = draw(st.sampled_from(["r1", "r2"]))
        if draw(st.booleans()):
            extra["memory_gb"] = draw(st.sampled_from([16.0, 40.0, 80.0]))
        devices.append(device(f"g{g}", MODELS[g % 3], draw(st.integers(1, max_count)), draw(levels()), **extra))
    jobs = []
    for j in range(draw(st.integers(1, max_jobs))):
        fields: dict[str, Any] = {
            "priority": draw(st.sampled_from(["critical", "high", "normal", "low"])),
            "weight": draw(st.sampled_from([0.5, 1.0, 3.0])),
        }
        if draw(st.booleans()):
            fields["deadline_hours"] = draw(st.sampled_from([2.0, 5.0, 10.0, 30.0]))
        if draw(st.integers(0, 3)) == 0:
            fields["max_devices"] = draw(st.integers(1, 3))
        if draw(st.integers(0, 3)) == 0:
            fields["min_devices"] = draw(st.integers(1, 2))
            fields["max_devices"] = max(fields.get("max_devices", 2), fields["min_devices"])
        if draw(st.integers(0, 3)) == 0:
            fields["memory_gb"] = draw(st.sampled_from([20.0, 60.0]))
        if draw(st.integers(0, 3)) == 0:
            fields["allowed_models"] = draw(st.lists(st.sampled_from(MODELS), min_size=1, max_size=2, unique=True))
        if draw(st.integers(0, 3)) == 0:
            fields["speed_on"] = {draw(st.sampled_from(MODELS)): draw(st.sampled_from([0.5, 1.5]))}
        p = draw(st.sampled_from([0.0, 0.5, 0.9, 0.99, 1.0]))
        jobs.append(job(f"j{j}", work=draw(st.sampled_from([1.0, 10.0, 40.0])), p=p, **fields))
    power: dict[str, Any] = {}
    peak = sum(d["count"] * max(lv["cap_w"] for lv in d["power_levels"]) for d in devices)
    if draw(st.booleans()):
        power["budget_w"] = round(peak * draw(st.sampled_from([0.3, 0.6, 0.9, 1.2])))
    domains = {d["domain"] for d in devices if "domain" in d}
    if domains and draw(st.booleans()):
        name = sorted(domains)[0]
        power["domains"] = {name: round(peak * draw(st.sampled_from([0.2, 0.5])))}
    objective = draw(st.sampled_from(["weighted_speedup", "weighted_speedup", "min_power"]))
    return workload(devices, jobs, power=power, objective=objective, options={"time_limit_s": 20, "mip_gap": 1e-7})


def failure_queue(n: int, seed: int = 0) -> NightQueue:
    """A night queue with n one-device failures of a 1,000,000-device group at random instants over 12 h, each
    repaired in 0.01-2 h, built without validation (past 10,000 failures the schema refuses it): what the cost of
    checking failures is measured on (bench/failure_check.py)."""
    rng = random.Random(seed)
    group = DeviceGroup(id="g", model="m", count=1_000_000, power_levels=(PowerLevel(cap_w=300.0, speed=1.0),))
    failures = tuple(
        DeviceFailure(device="g", count=1, at_hours=rng.uniform(0, 12), repair_hours=rng.uniform(0.01, 2))
        for _ in range(n)
    )
    return NightQueue.model_construct(devices=(group,), failures=failures)
