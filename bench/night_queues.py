"""Seeded night queues for the night benchmarks, and lower bounds on their makespan and weighted completion.

    from bench.night_queues import SUITE, generate, lower_bounds
    queue = generate(seed=3, size="small")      # a NightQueue document (dict)

Three sizes: small (30-60 jobs, 24-48 devices), medium (120 jobs, 56-80 devices) and large (500 jobs,
160-224 devices); 3-5 device types from the shipped catalog (H100-SXM, A100-SXM, V100-SXM2, A40, L4, T4:
their power levels follow the Zeus measurements in /work/shared/data/device_measurements.md), job-specific
speed factors (Gavel: the faster type is not faster for every job), two power domains with budgets, a
global budget of 60-85 % of the fleet's peak draw, an evening window below it and sometimes a cheap window
above it, releases over the first hours, `after` chains (prep -> train -> eval -> report), hard deadlines
on some critical/high jobs and soft ones on some normal jobs. The total work is scaled to 0.45-0.75 times
what the fleet can do in the night at full speed, so the queue contends for devices and power.

Three families of issue 28 (FAMILY_SUITE, 24-30 jobs each, so the time-indexed optimum of optsched.night.bound is
in reach): `short` (a 6 h night of 26-30 short single jobs, work 0.2-0.3 of the fleet's night, 80 % of the normal
ones with a tight soft deadline at 1.2-2 x their fastest run), `chains` (mostly chains of 4-6 jobs: prep, tune,
train, distil, eval, report) and `halving` (the budget above idle halves for 3 h from 2.5-3.5 h into the night).

Lower bounds (any valid timeline is at least this):
- makespan >= max(longest release-plus-chain path with every job alone on its best devices at full speed,
  total work / the fleet's summed top speeds per hour);
- weighted completion >= max(sum w_j EF_j, Smith's rule on one machine with the fleet's summed top speed)
  / sum w_j, where EF_j is job j's earliest finish along its chain: every job's progress rate (Amdahl
  speedup) is at most the summed speed of its devices, so the fleet does at most that much work per hour.
"""

from __future__ import annotations

import math
import random
from typing import Any

from optsched.model.amdahl import speedup
from optsched.schema.catalog import catalog_entry
from optsched.schema.night import NightQueue
from optsched.schema.workload import PRIORITY_WEIGHT

MODELS = ("H100-SXM", "A100-SXM", "A40", "V100-SXM2", "L4", "T4")
SIZES = {
    "small": ((30, 60), (24, 48)),
    "medium": ((120, 120), (56, 80)),
    "large": ((500, 500), (160, 224)),
    # Families of issue 28, each <= 30 jobs (so the time-indexed optimum is in reach) and with its own structure:
    "short": ((26, 30), (12, 20)),  # many short jobs, most with tight soft deadlines
    "chains": ((24, 30), (16, 28)),  # long chains (4-6 jobs after one another), few single jobs
    "halving": ((24, 30), (16, 32)),  # the global budget halves (above idle) for 3 h in the middle of the night
}
HOURS = {"small": 8.0, "medium": 8.0, "large": 10.0, "short": 6.0, "chains": 8.0, "halving": 8.0}
FAMILIES = ("short", "chains", "halving")
# The benchmark suite: (size, seed); 12 small, 8 medium and 4 large queues.
SUITE = tuple(
    [("small", s) for s in range(1, 13)]
    + [("medium", s) for s in range(101, 109)]
    + [("large", s) for s in range(201, 205)]
)
# The new families (issue 28): 3 queues each.
FAMILY_SUITE = tuple((family, s) for k, family in enumerate(FAMILIES) for s in range(301 + 10 * k, 304 + 10 * k))


def generate(seed: int, size: str = "small") -> dict[str, Any]:
    """A night queue document, the same for the same (seed, size)."""
    rng = random.Random(f"{size}-{seed}")
    (lo, hi), (dlo, dhi) = SIZES[size]
    n_jobs = rng.randint(lo, hi)
    n_devices = rng.randint(dlo, dhi)
    hours = HOURS[size]
    types = sorted(rng.sample(MODELS, rng.randint(3, 5)), key=MODELS.index)
    shares = [rng.uniform(0.6, 1.4) for _ in types]
    counts = [max(4, round(n_devices * s / sum(shares))) for s in shares]
    devices = []
    for k, (model, count) in enumerate(zip(types, counts, strict=True)):
        devices.append(
            {"id": model.lower().split("-")[0], "model": model, "count": count, "domain": f"rack{1 + k % 2}"}
        )
    entries = {m: catalog_entry(m) for m in types}
    top = {m: max(lv["speed"] for lv in entries[m]["power_levels"]) for m in types}
    peak_w = {m: max(lv["cap_w"] for lv in entries[m]["power_levels"]) for m in types}
    idle = sum(entries[d["model"]]["idle_w"] * d["count"] for d in devices)
    peak = sum(peak_w[d["model"]] * d["count"] for d in devices)

    jobs: list[dict[str, Any]] = []
    chain_share = {"chains": 0.85, "short": 0.0}.get(size, 0.25)
    while len(jobs) < n_jobs:
        if n_jobs - len(jobs) >= 3 and rng.random() < chain_share:
            jobs.extend(_chain(rng, len(jobs), types, hours, n_jobs - len(jobs), long=size == "chains"))
        elif size == "short":
            jobs.append(_job(rng, f"j{len(jobs)}-short", "short", types, release=_release(rng, hours)))
        else:
            jobs.append(_single(rng, len(jobs), types, hours))
    memory = {m: entries[m]["memory_gb"] for m in types}
    for j in jobs:  # every job has an eligible device
        allowed = j.get("allowed_models", types)
        if j.get("memory_gb", 0) > max(memory[m] for m in allowed):
            del j["memory_gb"]
    capacity = sum(top[d["model"]] * d["count"] for d in devices) * hours
    target = capacity * (rng.uniform(0.2, 0.3) if size == "short" else rng.uniform(0.45, 0.75))
    scale = target / sum(j["work_hours"] for j in jobs)
    for j in jobs:
        j["work_hours"] = round(max(0.1, j["work_hours"] * scale), 3)
    _set_deadlines(rng, jobs, devices, top, hours, tight=size == "short")

    domains = {}
    for rack in sorted({d["domain"] for d in devices}):
        members = [d for d in devices if d["domain"] == rack]
        r_idle = sum(entries[d["model"]]["idle_w"] * d["count"] for d in members)
        r_peak = sum(peak_w[d["model"]] * d["count"] for d in members)
        domains[rack] = round(r_idle + (r_peak - r_idle) * rng.uniform(0.75, 0.95))
    share = rng.uniform(0.60, 0.85)
    budget = round(idle + (peak - idle) * share)
    windows = [
        {
            "from_hours": 0.0,
            "to_hours": round(rng.uniform(1.0, 2.5), 2),
            "budget_w": round(idle + (peak - idle) * share * rng.uniform(0.6, 0.8)),
        }
    ]
    if size == "halving":
        a = round(rng.uniform(2.5, 3.5), 2)
        windows.append({"from_hours": a, "to_hours": a + 3.0, "budget_w": round(idle + (budget - idle) / 2)})
    elif rng.random() < 0.5:
        a = round(rng.uniform(4.0, 5.5), 2)
        windows.append(
            {
                "from_hours": a,
                "to_hours": round(a + rng.uniform(1.5, 3.0), 2),
                "budget_w": round(idle + (peak - idle) * min(1.0, share * 1.2)),
            }
        )
    return {
        "name": f"{size}-{seed}",
        "devices": devices,
        "jobs": jobs,
        "power": {"budget_w": budget, "domains": domains, "windows": windows},
        "options": {"time_limit_s": 10, "mip_gap": 0.01},
    }


def _single(rng: random.Random, k: int, types, hours: float) -> dict[str, Any]:
    kind = rng.choices(["train", "finetune", "short"], weights=[2, 3, 5])[0]
    return _job(rng, f"j{k}-{kind}", kind, types, release=_release(rng, hours))


def _chain(rng: random.Random, k: int, types, hours: float, room: int, long: bool = False) -> list[dict[str, Any]]:
    if long:
        kinds = ["short", "finetune", "train", "finetune", "short", "short"][: min(room, rng.randint(4, 6))]
        names = ["prep", "tune", "train", "distil", "eval", "report"]
    else:
        kinds = ["short", "train", "short", "short"][: min(room, rng.randint(2, 4))]
        names = ["prep", "train", "eval", "report"]
    release = _release(rng, hours)
    out = []
    for step, kind in enumerate(kinds):
        job = _job(rng, f"c{k}-{names[step]}", kind, types, release=release if step == 0 else 0.0)
        if step:
            job["after"] = [out[-1]["id"]]
        out.append(job)
    if rng.random() < 0.3:
        out[1]["priority"] = rng.choice(["critical", "high"])
    return out


def _job(rng: random.Random, name: str, kind: str, types, release: float) -> dict[str, Any]:
    if kind == "train":
        work, p, most, memory = (
            rng.uniform(8, 30),
            rng.uniform(0.95, 0.995),
            rng.choice([4, 8, 8, 16]),
            rng.choice([None, 40, 60]),
        )
    elif kind == "finetune":
        work, p, most, memory = (
            rng.uniform(2, 8),
            rng.uniform(0.85, 0.97),
            rng.choice([2, 4, 4]),
            rng.choice([None, None, 24, 40]),
        )
    else:
        work, p, most, memory = rng.uniform(0.2, 2.0), rng.uniform(0.5, 0.95), rng.choice([1, 1, 2]), None
    job: dict[str, Any] = {
        "id": name,
        "work_hours": work,
        "parallel_fraction": round(p, 3),
        "priority": rng.choices(["critical", "high", "normal", "low"], weights=[0.07, 0.16, 0.47, 0.30])[0],
        "max_devices": most,
    }
    if memory is not None:
        job["memory_gb"] = memory
    if release:
        job["release_hours"] = release
    if rng.random() < 0.25:
        model = rng.choice(types)
        job["speed_on"] = {model: round(rng.uniform(0.5, 1.4), 2)}
    if rng.random() < 0.1 and len(types) > 1:
        job["allowed_models"] = sorted(rng.sample(list(types), 2))
    if rng.random() < 0.3:
        job["weight"] = rng.choice([0.5, 2.0])
    return job


def _release(rng: random.Random, hours: float) -> float:
    return 0.0 if rng.random() < 0.55 else round(rng.uniform(0.0, hours * 0.6), 2)


def _set_deadlines(rng: random.Random, jobs, devices, top, hours: float, tight: bool = False) -> None:
    """Deadlines a lone job could meet with room: release (or its chain's) + 1.5-4 x its fastest run, within the
    night; `tight`: 80 % of the normal jobs get a soft one at 1.2-2 x their fastest run + 0-0.5 h."""
    fastest = max(top.values())
    ready: dict[str, float] = {}
    for j in jobs:
        r = j.get("release_hours", 0.0)
        for p in j.get("after", []):
            r = max(r, ready[p])
        run = j["work_hours"] / speedup(j["parallel_fraction"], fastest, fastest * j["max_devices"])
        ready[j["id"]] = r + run
        hard = j["priority"] in ("critical", "high")
        if tight and j["priority"] == "normal" and rng.random() < 0.8:
            j["deadline_hours"] = round(max(r + run * rng.uniform(1.2, 2.0) + rng.uniform(0.0, 0.5), 0.25), 2)
        elif rng.random() < (0.6 if hard else 0.2 if j["priority"] == "normal" else 0.0):
            deadline = r + run * rng.uniform(1.5, 4.0) + rng.uniform(0.5, 2.0)
            j["deadline_hours"] = round(min(max(deadline, 1.0), hours * 1.25), 2)


def lower_bounds(queue: dict[str, Any] | NightQueue) -> tuple[float, float]:
    """(makespan, weighted mean completion) lower bounds in hours (see the module docstring)."""
    q = NightQueue.load(queue)
    from optsched.night.fleet import Fleet

    fleet = Fleet(q)
    best = [fleet.best_speedup(j) for j in range(len(q.jobs))]
    finish: dict[str, float] = {}
    pending = list(range(len(q.jobs)))
    while pending:
        rest = []
        for j in pending:
            job = q.jobs[j]
            if all(p in finish for p in job.after):
                start = max([job.release_hours, *(finish[p] for p in job.after)])
                finish[job.id] = start + (job.work_hours / best[j] if best[j] > 0 else math.inf)
            else:
                rest.append(j)
        if len(rest) == len(pending):
            raise ValueError("dependency cycle")
        pending = rest
    rate = sum(
        g.count * max(fleet.speed(j, k, fleet.fastest_level(j, k)) for j in range(len(q.jobs)))
        for k, g in enumerate(q.devices)
    )
    total = sum(j.work_hours for j in q.jobs)
    makespan = max(max(finish.values()), total / rate)
    weights = [PRIORITY_WEIGHT[j.priority] * j.weight for j in q.jobs]
    chain = sum(w * finish[j.id] for w, j in zip(weights, q.jobs, strict=True))
    smith, clock = 0.0, 0.0
    for j in sorted(range(len(q.jobs)), key=lambda j: -weights[j] / q.jobs[j].work_hours):
        clock += q.jobs[j].work_hours / rate
        smith += weights[j] * clock
    return makespan, max(chain, smith) / sum(weights)
