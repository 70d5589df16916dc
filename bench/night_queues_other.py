"""Night queues from a second generator, written apart from bench/night_queues.py to test the planner on structure
it was not tuned on (OTHER_SUITE: five families, 120 jobs, two seeds each).

    from bench.night_queues_other import OTHER_SUITE, generate_other
    queue = generate_other(seed=0, family="lowpower")

What differs from bench/night_queues.py: 2-4 device types with 2 or more devices each (`wide`: 2 types), jobs'
work log-normal (most short, a few long) with parallel fractions anywhere in 0.3-0.99 and 1-8 devices (`wide`:
2-20 h, 0.97-0.999 and 8-32 devices), 15 % of the jobs after one earlier job at random, no chain templates, and
deadlines 2-5 x the job's fastest run + 0.5-3 h after its release. The families:

* `burst`: every job released at 0, 2.5 or 5 h;
* `wide`: few, large, very parallel jobs on two device types;
* `hardheavy`: a third of the jobs critical or high, 70 % of those with a hard deadline;
* `lowpower`: the global budget 25-40 % of the way from the idle draw to the peak (50-90 % elsewhere);
* `weights`: job weights spread over 0.14-10 (log-uniform).

The work is scaled to 0.4-0.8 of what the fleet does in 8 h at full speed; half the queues get a window lowering
the budget to 40-80 % of its headroom for 1-3 h. This generator found the planner's soft-deadline trades that
issue 28's reference now guards against (docs/benchmarks/night.md, 2026-12-06), so it is no longer held out.
"""

from __future__ import annotations

import math
import random
from typing import Any

from optsched.model.amdahl import speedup
from optsched.schema.catalog import catalog_entry

MODELS = ("H100-SXM", "A100-SXM", "A40", "V100-SXM2", "L4", "T4")
OTHER_FAMILIES = ("burst", "wide", "hardheavy", "lowpower", "weights")
OTHER_HOURS = 8.0
OTHER_JOBS = 120
OTHER_SUITE = tuple((family, seed) for family in OTHER_FAMILIES for seed in (0, 1))


def generate_other(seed: int, family: str, jobs: int = OTHER_JOBS) -> dict[str, Any]:
    """A night queue document of `family` (OTHER_FAMILIES), the same for the same (seed, family, jobs)."""
    if family not in OTHER_FAMILIES:
        raise ValueError(f"unknown family {family!r}; choose one of {OTHER_FAMILIES}")
    rng = random.Random(f"holdout-{family}-{seed}")
    types = rng.sample(MODELS, 2 if family == "wide" else rng.randint(2, 4))
    n_devices = rng.randint(16, 40)
    devices = [
        {
            "id": f"g{k}",
            "model": model,
            "count": max(2, n_devices // len(types) + rng.randint(-3, 3)),
            "domain": f"d{k % 2}",
        }
        for k, model in enumerate(types)
    ]
    entry = {m: catalog_entry(m) for m in types}
    peak_w = {m: max(level["cap_w"] for level in entry[m]["power_levels"]) for m in types}
    top = {m: max(level["speed"] for level in entry[m]["power_levels"]) for m in types}
    idle = sum(entry[d["model"]]["idle_w"] * d["count"] for d in devices)
    peak = sum(peak_w[d["model"]] * d["count"] for d in devices)
    queue_jobs = [_job(rng, family, k) for k in range(jobs)]
    capacity = sum(top[d["model"]] * d["count"] for d in devices) * OTHER_HOURS
    scale = capacity * rng.uniform(0.4, 0.8) / sum(j["work_hours"] for j in queue_jobs)
    for j in queue_jobs:
        j["work_hours"] = round(max(0.05, j["work_hours"] * scale), 3)
    _set_deadlines(rng, family, queue_jobs, max(top.values()))
    share = rng.uniform(0.25, 0.4) if family == "lowpower" else rng.uniform(0.5, 0.9)
    domains = {}
    for k in range(min(2, len(devices))):
        members = [d for d in devices if d["domain"] == f"d{k}"]
        domains[f"d{k}"] = round(
            sum(
                entry[d["model"]]["idle_w"] * d["count"]
                + (peak_w[d["model"]] - entry[d["model"]]["idle_w"]) * d["count"] * rng.uniform(0.6, 1.0)
                for d in members
            )
        )
    power: dict[str, Any] = {"budget_w": round(idle + (peak - idle) * share), "domains": domains}
    if rng.random() < 0.5:
        start = round(rng.uniform(1, 4), 2)
        power["windows"] = [
            {
                "from_hours": start,
                "to_hours": start + rng.uniform(1, 3),
                "budget_w": round(idle + (peak - idle) * share * rng.uniform(0.4, 0.8)),
            }
        ]
    return {"name": f"{family}-{seed}", "devices": devices, "jobs": queue_jobs, "power": power}


def _job(rng: random.Random, family: str, k: int) -> dict[str, Any]:
    if family == "wide":
        work, p, most = rng.uniform(2, 20), rng.uniform(0.97, 0.999), rng.choice([8, 16, 32])
    else:
        work, p, most = rng.lognormvariate(0.3, 1.0), rng.uniform(0.3, 0.99), rng.choice([1, 1, 2, 4, 8])
    weights = [1, 4, 4, 2] if family == "hardheavy" else [1, 2, 5, 3]
    priority = rng.choices(["critical", "high", "normal", "low"], weights=weights)[0]
    # Both drawn for every family, so that each family's queues stay those the planner was measured on.
    burst = rng.choice([0.0, 2.5, 5.0])
    spread = 0.0 if rng.random() < 0.5 else round(rng.uniform(0, 4), 2)
    release = burst if family == "burst" else spread
    job: dict[str, Any] = {
        "id": f"h{k}",
        "work_hours": round(work, 3),
        "parallel_fraction": round(p, 3),
        "priority": priority,
        "max_devices": most,
    }
    if release:
        job["release_hours"] = release
    if family == "weights":
        job["weight"] = round(math.exp(rng.uniform(-2, 2.3)), 2)
    if k >= 3 and rng.random() < 0.15:
        job["after"] = [f"h{rng.randrange(k)}"]
    return job


def _set_deadlines(rng: random.Random, family: str, jobs: list[dict[str, Any]], fastest: float) -> None:
    """2-5 x the job's fastest run + 0.5-3 h after its release, at most 1.3 x the night: 40 % of the critical and
    high jobs (70 % in `hardheavy`), 30 % of the others (soft)."""
    for j in jobs:
        run = j["work_hours"] / speedup(j["parallel_fraction"], fastest, fastest * j["max_devices"])
        hard = j["priority"] in ("critical", "high")
        if rng.random() < (0.7 if hard and family == "hardheavy" else 0.4 if hard else 0.3):
            due = j.get("release_hours", 0.0) + run * rng.uniform(2, 5) + rng.uniform(0.5, 3)
            j["deadline_hours"] = round(min(OTHER_HOURS * 1.3, due), 2)
