"""Small night queues for tests: hypothesis strategies with every night feature switched on at random."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tests.support.factories import device, job, workload

MODELS = ("fast", "slow")


@st.composite
def night_queues(draw, max_jobs: int = 5) -> dict[str, Any]:
    devices = []
    for g in range(draw(st.integers(1, 2))):
        levels = draw(st.sampled_from([[(100.0, 1.0)], [(100.0, 1.0), (50.0, 0.6)], [(200.0, 2.0), (120.0, 1.5)]]))
        extra: dict[str, Any] = {
            "idle_w": draw(st.sampled_from([0.0, 10.0])),
            "domain": f"r{g}",
            "memory_gb": draw(st.sampled_from([24.0, 40.0])),
        }
        devices.append(device(f"g{g}", MODELS[g], draw(st.integers(1, 3)), levels, **extra))
    jobs = []
    for k in range(draw(st.integers(1, max_jobs))):
        extra = {
            "priority": draw(st.sampled_from(["critical", "high", "normal", "low"])),
            "release_hours": draw(st.sampled_from([0.0, 0.0, 0.5, 1.0, 2.5])),
        }
        if draw(st.booleans()):
            extra["deadline_hours"] = draw(st.sampled_from([1.0, 2.0, 4.0, 8.0]))
        if k and draw(st.booleans()):
            extra["after"] = sorted(
                set(draw(st.lists(st.sampled_from([f"j{i}" for i in range(k)]), min_size=1, max_size=2)))
            )
        if draw(st.integers(0, 2)) == 0:
            extra["max_devices"] = draw(st.integers(1, 2))
        if draw(st.integers(0, 4)) == 0:
            extra["min_devices"] = 2
            extra["max_devices"] = max(extra.get("max_devices", 2), 2)
        if draw(st.integers(0, 4)) == 0:
            extra["memory_gb"] = 30.0
        if draw(st.integers(0, 4)) == 0:
            extra["allowed_models"] = [draw(st.sampled_from(MODELS))]
        if draw(st.integers(0, 4)) == 0:
            extra["speed_on"] = {draw(st.sampled_from(MODELS)): 1.5}
        p = draw(st.sampled_from([0.0, 0.5, 0.9, 1.0]))
        jobs.append(job(f"j{k}", work=draw(st.sampled_from([0.5, 1.0, 3.0])), p=p, **extra))
    idle = sum(d["count"] * d["idle_w"] for d in devices)
    peak = sum(d["count"] * max(lv["cap_w"] for lv in d["power_levels"]) for d in devices)
    power: dict[str, Any] = {}
    if draw(st.booleans()):
        power["budget_w"] = round(idle + (peak - idle) * draw(st.sampled_from([0.5, 0.8, 1.0])))
    windows = []
    for start, end in draw(st.sampled_from([[], [(0.0, 1.0)], [(0.5, 1.5), (2.0, 3.0)]])):
        windows.append(
            {
                "from_hours": start,
                "to_hours": end,
                "budget_w": round(idle + (peak - idle) * draw(st.sampled_from([0.3, 0.6, 1.2]))),
            }
        )
    if windows:
        power["windows"] = windows
    if draw(st.booleans()):
        d = devices[0]
        top = d["count"] * max(lv["cap_w"] for lv in d["power_levels"])
        power["domains"] = {"r0": round(d["count"] * d["idle_w"] + (top - d["count"] * d["idle_w"]) * 0.7)}
    extra: dict[str, Any] = {}
    if draw(st.booleans()):
        d = draw(st.sampled_from(devices))
        extra["failures"] = [
            {
                "device": d["id"],
                "count": draw(st.integers(1, d["count"])),
                "at_hours": draw(st.sampled_from([0.3, 1.0, 1.7])),
                "repair_hours": draw(st.sampled_from([0.5, 2.0])),
            }
        ]
        extra["defaults"] = {
            "checkpoint_hours": draw(st.sampled_from([0.25, 1.0])),
            "restart_hours": draw(st.sampled_from([0.0, 0.2])),
            "elastic": draw(st.booleans()),
        }
    return workload(devices, jobs, power=power, options={"time_limit_s": 20, "mip_gap": 1e-6}, **extra)
