"""Seeded generator of realistic workloads from the shipped device catalog.

Per-job speed on each device type varies as in Gavel's throughput matrix (a job may be relatively slower on
a type that is faster for others); cap curves come from the catalog (Zeus measurements); parallel fractions
0.8-0.999; mixed priorities; deadlines on a third of the jobs; budgets at 50-90 % of peak power.

`generate_racks` is a second family, closer to a production fleet: device groups sit in racks of four, each
rack with its own power budget (its domain), one or two GPU models per rack, about one device per two jobs,
a quarter of the jobs hard (8 % critical, 17 % high) and most hard jobs with a deadline; sizes up to 20,000 jobs
on 128 groups (RACK_SIZES).
"""

from __future__ import annotations

import random
from typing import Any

from optsched.schema.catalog import device_catalog
from optsched.schema.workload import Workload

SIZES: dict[str, tuple[int, int, int]] = {  # jobs, device groups, power levels
    "S": (20, 4, 3),
    "M": (200, 16, 4),
    "L": (1000, 32, 4),
    "XL": (5000, 64, 4),
    "T": (60, 8, 4),  # quick to find plans, slow to prove: the time-limit test's instance
}
GPU_MODELS = ("H100-SXM", "A100-SXM", "V100-SXM2", "A40", "L4", "T4", "V100-PCIe")
PRIORITIES = (("critical", 0.05), ("high", 0.15), ("normal", 0.5), ("low", 0.3))


def generate(size: str, seed: int, *, options: dict[str, float] | None = None) -> Workload:
    """Workload `size`-`seed`; `options` (time_limit_s, mip_gap) default to the planner's own defaults."""
    n_jobs, n_groups, n_levels = SIZES[size]
    rng = random.Random(f"{size}-{seed}")
    catalog = device_catalog()
    # About one device per 1.2 jobs at every size, so hard jobs (a fifth of them) always fit somewhere.
    scale = max(1, round(n_jobs / (n_groups * 20)))
    devices: list[dict[str, Any]] = []
    for g in range(n_groups):
        model = GPU_MODELS[g % len(GPU_MODELS)] if g < len(GPU_MODELS) else rng.choice(GPU_MODELS)
        entry = catalog[model]
        levels = entry["power_levels"][:n_levels] if n_levels >= len(entry["power_levels"]) else _pick_levels(
            entry["power_levels"], n_levels
        )
        devices.append(
            {
                "id": f"{model.lower()}-{g}",
                "model": model,
                "count": (rng.choice((4, 8, 8, 16)) if size == "S" else rng.choice((8, 16, 16, 32))) * scale,
                "domain": f"rack{g % 2 + 1}",
                "power_levels": levels,
            }
        )
    # Enough demand that devices are contended: about 1.5 jobs per device at most sizes.
    jobs = []
    for j in range(n_jobs):
        priority = rng.choices([p for p, _ in PRIORITIES], weights=[w for _, w in PRIORITIES])[0]
        work = round(rng.uniform(8, 400), 1)
        job: dict[str, Any] = {
            "id": f"job-{j:05d}",
            "work_hours": work,
            "parallel_fraction": round(rng.uniform(0.8, 0.999), 3),
            "priority": priority,
            "weight": rng.choice((1.0, 1.0, 2.0)),
            "max_devices": rng.choice((1, 2, 4, 8, 16, 32)),
            "speed_on": {m: round(rng.lognormvariate(0, 0.25), 2) for m in GPU_MODELS if rng.random() < 0.4},
        }
        if rng.random() < 0.2:
            job["memory_gb"] = rng.choice((20, 30, 40))
        if rng.random() < 1 / 3:
            # Reachable on about two reference devices, with some slack for hard jobs.
            slack = rng.uniform(1.2, 3.0) if priority in ("critical", "high") else rng.uniform(0.5, 2.0)
            job["deadline_hours"] = round(work / 2.0 * slack, 2)
        jobs.append(job)
    peak = sum(d["count"] * max(lv["cap_w"] for lv in d["power_levels"]) for d in devices)
    share = rng.uniform(0.5, 0.9)
    rack_peak = {
        r: sum(d["count"] * d["power_levels"][0]["cap_w"] for d in devices if d["domain"] == r)
        for r in ("rack1", "rack2")
    }
    power = {
        "budget_w": round(peak * share),
        "domains": {r: round(p * min(1.0, share + 0.1)) for r, p in rack_peak.items()},
    }
    return Workload.load(
        {
            "name": f"{size}-seed{seed}",
            "devices": devices,
            "jobs": jobs,
            "power": power,
            "options": options or {},
        }
    )


def _pick_levels(levels: list[dict[str, float]], n: int) -> list[dict[str, float]]:
    """Keep the top and bottom caps and spread the rest evenly."""
    if n >= len(levels):
        return list(levels)
    step = (len(levels) - 1) / (n - 1)
    return [levels[round(i * step)] for i in range(n)]


RACK_SIZES: dict[str, tuple[int, int]] = {  # jobs, device groups (4 power levels each, 4 groups per rack)
    "M": (200, 16),
    "L": (1000, 32),
    "2K": (2000, 48),
    "5K": (5000, 64),
    "10K": (10000, 100),
    "20K": (20000, 128),
}
RACK_PRIORITIES = (("critical", 0.08), ("high", 0.17), ("normal", 0.45), ("low", 0.30))
GROUPS_PER_RACK = 4


def generate_racks(
    size: str, seed: int, *, options: dict[str, float] | None = None, group_factor: int = 1
) -> Workload:
    """Workload `size`-`seed` of the rack family (module docstring); `options` as for `generate`.
    `group_factor` > 1 spreads the same number of devices over that many times the groups (smaller groups, more
    racks: a job's devices must come from several groups more often), a family of its own (other random draws)."""
    n_jobs, n_groups = RACK_SIZES[size]
    rng = random.Random(f"racks-{size}-{seed}" if group_factor == 1 else f"racks-{size}-{seed}-x{group_factor}")
    n_groups *= group_factor
    catalog = device_catalog()
    per_group = n_jobs / n_groups / 2  # about one device per two jobs
    devices: list[dict[str, Any]] = []
    racks = (n_groups + GROUPS_PER_RACK - 1) // GROUPS_PER_RACK
    for r in range(racks):
        models = rng.sample(GPU_MODELS, 2)
        for i in range(min(GROUPS_PER_RACK, n_groups - r * GROUPS_PER_RACK)):
            model = models[0] if i < 2 or rng.random() < 0.5 else models[1]
            entry = catalog[model]
            devices.append({
                "id": f"r{r:02d}-{model.lower()}-{i}",
                "model": model,
                "count": max(2, round(per_group * rng.uniform(0.5, 1.5))),
                "domain": f"rack{r:02d}",
                "power_levels": _pick_levels(entry["power_levels"], 4),
            })
    jobs = []
    for j in range(n_jobs):
        priority = rng.choices([p for p, _ in RACK_PRIORITIES], weights=[w for _, w in RACK_PRIORITIES])[0]
        hard = priority in ("critical", "high")
        work = round(rng.uniform(8, 400), 1)
        job: dict[str, Any] = {
            "id": f"job-{j:05d}",
            "work_hours": work,
            "parallel_fraction": round(rng.uniform(0.8, 0.999), 3),
            "priority": priority,
            "max_devices": rng.choice((1, 2, 4, 8, 16)),
        }
        if rng.random() < 0.5:
            job["weight"] = rng.choice((1.0, 2.0))
        if rng.random() < 0.3:
            job["speed_on"] = {m: round(rng.lognormvariate(0, 0.25), 2) for m in rng.sample(GPU_MODELS, 2)}
        if rng.random() < 0.15:
            job["memory_gb"] = rng.choice((20, 30, 40))
        if rng.random() < (0.7 if hard else 0.25):
            # Reachable on about two reference devices: hard jobs with slack, others possibly not at all.
            slack = rng.uniform(1.5, 4.0) if hard else rng.uniform(0.5, 2.0)
            job["deadline_hours"] = round(work / 2.0 * slack, 2)
        jobs.append(job)
    peak = {d["domain"]: 0.0 for d in devices}
    for d in devices:
        peak[d["domain"]] += d["count"] * max(lv["cap_w"] for lv in d["power_levels"])
    domains = {rack: round(p * rng.uniform(0.7, 0.9)) for rack, p in peak.items()}
    power = {"budget_w": round(sum(peak.values()) * rng.uniform(0.65, 0.8)), "domains": domains}
    return Workload.load({
        "name": f"racks-{size}-seed{seed}" + ("" if group_factor == 1 else f"-x{group_factor}"),
        "devices": devices,
        "jobs": jobs,
        "power": power,
        "options": options or {},
    })
