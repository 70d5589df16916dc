"""Night queues from a third generator, written after the planner's last tuning and measured without changing it
(THIRD_SUITE: five families, 120 jobs, two seeds each), on structure neither bench/night_queues.py nor
bench/night_queues_other.py has.

    from bench.night_queues_third import THIRD_SUITE, generate_third
    queue = generate_third(seed=0, family="affinity")

Every family: 3-5 device types (H100 to T4) of 3-12 devices each in three power domains, jobs released as a
Poisson stream over the first 6 h (a third at 0), work from a mixture (70 % 0.05-0.5 h, 25 % 0.5-3 h, 5 % 4-12 h
on one reference device), parallel fractions 0.5-0.995, and memory needs that keep the largest jobs off the small
devices (16-24 GB). Deadlines: 45 % of the critical and high jobs (hard), 35 % of the others (soft), due 1.5-4 x
the job's fastest run + 0.25-2 h after its release. The families:

* `affinity`: each job runs 0.4-2.5 x faster on each model than the catalog says (`speed_on`), and a quarter
  may use only two of the models (`allowed_models`);
* `gangs`: half the jobs need 2-8 devices at once (`min_devices`), up to twice that;
* `failures`: 3-8 failures of 1-4 devices at random times, each repaired after 0.5-3 h; a third of the jobs are
  not elastic;
* `tight`: every domain's budget 35-55 % of the way from its idle draw to its peak, the global one looser;
* `fanin`: a quarter of the jobs wait for 2-3 earlier jobs (`after`), and every deadline is on such a job.

The work is scaled to 0.5-0.85 of what the fleet does in 8 h at full speed.
"""

from __future__ import annotations

import random
from typing import Any

from optsched.model.amdahl import speedup
from optsched.schema.catalog import catalog_entry

MODELS = ("H100-SXM", "A100-SXM", "A40", "V100-SXM2", "L4", "T4")
THIRD_FAMILIES = ("affinity", "gangs", "failures", "tight", "fanin")
THIRD_HOURS = 8.0
THIRD_JOBS = 120
THIRD_SUITE = tuple((family, seed) for family in THIRD_FAMILIES for seed in (0, 1))


def generate_third(seed: int, family: str, jobs: int = THIRD_JOBS) -> dict[str, Any]:
    """A night queue document of `family` (THIRD_FAMILIES), the same for the same (seed, family, jobs)."""
    if family not in THIRD_FAMILIES:
        raise ValueError(f"unknown family {family!r}; choose one of {THIRD_FAMILIES}")
    rng = random.Random(f"third-{family}-{seed}")
    types = rng.sample(MODELS, rng.randint(3, 5))
    devices = [
        {"id": f"t{k}", "model": model, "count": rng.randint(3, 12), "domain": f"p{k % 3}"}
        for k, model in enumerate(types)
    ]
    entry = {m: catalog_entry(m) for m in types}
    queue_jobs = [_job(rng, family, k, types) for k in range(jobs)]
    fastest = {j["id"]: _fastest_speed(entry, types, j) for j in queue_jobs}
    capacity = sum(max(lv["speed"] for lv in entry[d["model"]]["power_levels"]) * d["count"] for d in devices)
    scale = capacity * THIRD_HOURS * rng.uniform(0.5, 0.85) / sum(j["work_hours"] for j in queue_jobs)
    for j in queue_jobs:
        j["work_hours"] = round(max(0.02, j["work_hours"] * scale), 3)
    _set_deadlines(rng, family, queue_jobs, fastest)
    queue: dict[str, Any] = {
        "name": f"{family}-{seed}",
        "devices": devices,
        "jobs": queue_jobs,
        "power": _power(rng, family, devices, entry),
    }
    if family == "failures":
        queue["failures"] = _failures(rng, devices)
    return queue


def _fastest_speed(entry: dict[str, Any], types: list[str], job: dict[str, Any]) -> float:
    """The job's speed on its fastest allowed model at the top cap (reference devices)."""
    allowed = job.get("allowed_models") or types
    return max(
        max(lv["speed"] for lv in entry[m]["power_levels"]) * job.get("speed_on", {}).get(m, 1.0)
        for m in allowed
        if m in entry
    )


def _job(rng: random.Random, family: str, k: int, types: list[str]) -> dict[str, Any]:
    size = rng.random()
    work = rng.uniform(0.05, 0.5) if size < 0.7 else rng.uniform(0.5, 3) if size < 0.95 else rng.uniform(4, 12)
    priority = rng.choices(["critical", "high", "normal", "low"], weights=[1, 2, 5, 3])[0]
    job: dict[str, Any] = {
        "id": f"q{k}",
        "work_hours": round(work, 3),
        "parallel_fraction": round(rng.uniform(0.5, 0.995), 3),
        "priority": priority,
        "max_devices": rng.choice([1, 2, 4, 8]) if work < 4 else rng.choice([8, 16]),
    }
    if rng.random() > 1 / 3:
        job["release_hours"] = round(min(6.0, rng.expovariate(1 / 2.0)), 2)
    if work >= 3:
        job["memory_gb"] = 32  # keeps the big jobs off the 16-24 GB devices
    if family == "affinity":
        job["speed_on"] = {m: round(rng.uniform(0.4, 2.5), 2) for m in types}
        if rng.random() < 0.25:
            job["allowed_models"] = rng.sample(types, 2)
    if family == "gangs" and rng.random() < 0.5:
        job["min_devices"] = rng.choice([2, 4, 8])
        job["max_devices"] = max(job["max_devices"], job["min_devices"] * rng.choice([1, 2]))
    if family == "failures" and rng.random() < 1 / 3:
        job["elastic"] = False
    if family == "fanin" and k >= 4 and rng.random() < 0.25:
        job["after"] = [f"q{i}" for i in rng.sample(range(k), rng.randint(2, 3))]
    return job


def _set_deadlines(rng: random.Random, family: str, jobs: list[dict[str, Any]], fastest: dict[str, float]) -> None:
    """1.5-4 x the fastest run + 0.25-2 h after the release (at most 1.3 x the night): 45 % of the critical and
    high jobs (hard), 35 % of the others (soft); in `fanin` only on jobs that wait for others."""
    by_id = {j["id"]: j for j in jobs}
    for j in jobs:
        if family == "fanin" and "after" not in j:
            continue
        s = fastest[j["id"]]
        run = j["work_hours"] / speedup(j["parallel_fraction"], s, s * j["max_devices"])
        ready = max([j.get("release_hours", 0.0)] + [by_id[i].get("release_hours", 0.0) for i in j.get("after", ())])
        hard = j["priority"] in ("critical", "high")
        if rng.random() < (0.45 if hard else 0.35) * (2 if family == "fanin" else 1):
            due = ready + run * rng.uniform(1.5, 4) + rng.uniform(0.25, 2)
            j["deadline_hours"] = round(min(THIRD_HOURS * 1.3, due), 2)


def _power(rng: random.Random, family: str, devices: list[dict[str, Any]], entry: dict[str, Any]) -> dict[str, Any]:
    def idle(ds: list[dict[str, Any]]) -> float:
        return sum(entry[d["model"]]["idle_w"] * d["count"] for d in ds)

    def peak(ds: list[dict[str, Any]]) -> float:
        return sum(max(lv["cap_w"] for lv in entry[d["model"]]["power_levels"]) * d["count"] for d in ds)

    low, high = (0.35, 0.55) if family == "tight" else (0.6, 1.0)
    domains = {}
    for name in sorted({d["domain"] for d in devices}):
        members = [d for d in devices if d["domain"] == name]
        domains[name] = round(idle(members) + (peak(members) - idle(members)) * rng.uniform(low, high))
    share = rng.uniform(0.6, 0.9) if family == "tight" else rng.uniform(0.5, 0.85)
    return {"budget_w": round(idle(devices) + (peak(devices) - idle(devices)) * share), "domains": domains}


def _failures(rng: random.Random, devices: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for _ in range(rng.randint(3, 8)):
        group = rng.choice(devices)
        out.append(
            {
                "device": group["id"],
                "count": rng.randint(1, min(4, group["count"])),
                "at_hours": round(rng.uniform(0.2, 7), 2),
                "repair_hours": round(rng.uniform(0.5, 3), 2),
            }
        )
    return out
