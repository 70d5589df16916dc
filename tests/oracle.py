"""Brute-force oracle for TINY workloads: try every assignment, keep the best feasible one.

Independent of optsched.model / optsched.solve and of optsched.verify: the few formulas are written
again here on purpose, straight from the semantics.
Sizes it is meant for: <= 3 jobs, <= 2 groups of <= 3 devices, <= 2 power levels each.
"""

from __future__ import annotations

import itertools
from typing import Any

from optsched.model.data import ModelData
from optsched.schema.workload import PRIORITY_WEIGHT, Priority, Workload
from optsched.solve.construct import construct

Assignment = dict[str, dict[tuple[str, float], int]]  # job id -> {(group id, cap_w): devices}

_TOL = 1e-6


def _eligible(job, group) -> bool:
    if job.memory_gb is not None and (group.memory_gb is None or group.memory_gb < job.memory_gb):
        return False
    return job.allowed_models is None or group.model in job.allowed_models


def _levels(group) -> list[tuple[float, float]]:
    """(cap_w, speed) per distinct cap; of equal caps only the fastest matters."""
    best: dict[float, float] = {}
    for lv in group.power_levels:
        best[lv.cap_w] = max(best.get(lv.cap_w, 0.0), lv.speed)
    return sorted(best.items())


def _speedup(p: float, units: list[tuple[int, float]]) -> float:
    """Heterogeneous Amdahl on (count, speed) units."""
    s_host = max(s for c, s in units if c)
    total = sum(c * s for c, s in units)
    return 1.0 / ((1.0 - p) / s_host + p / total)


def _job_options(w: Workload, job) -> list[dict[str, Any]]:
    """Every allocation of the job that meets its own constraints (eligibility, device counts, deadline)."""
    slots = []  # (group, cap_w, speed) a count is chosen for
    for g in w.devices:
        if _eligible(job, g):
            for cap, speed in _levels(g):
                slots.append((g, cap, speed * job.speed_on.get(g.model, 1.0)))
    options = []
    ranges = [range(g.count + 1) for g, _, _ in slots]
    for counts in itertools.product(*ranges):
        n = sum(counts)
        if n < job.min_devices or (job.max_devices is not None and n > job.max_devices):
            continue
        per_group: dict[str, int] = {}
        for (g, _, _), c in zip(slots, counts, strict=True):
            per_group[g.id] = per_group.get(g.id, 0) + c
        if any(per_group[g.id] > g.count for g, _, _ in slots):
            continue
        S = _speedup(job.parallel_fraction, [(c, s) for (_, _, s), c in zip(slots, counts, strict=True)])
        if job.deadline_hours is not None and job.work_hours / S > job.deadline_hours * (1 + _TOL):
            continue
        options.append(
            {
                "alloc": {(g.id, cap): c for (g, cap, _), c in zip(slots, counts, strict=True) if c},
                "used": per_group,
                "cap_w": {
                    gid: sum(c * cap for (g, cap, _), c in zip(slots, counts, strict=True) if g.id == gid)
                    for gid in per_group
                },
                "value": PRIORITY_WEIGHT[Priority(job.priority)] * job.weight * S,
            }
        )
    return options


def brute_force(workload: Any) -> tuple[float | None, Assignment]:
    """(optimal objective, best assignment) over all assignments, or (None, {}) if none is feasible.

    weighted_speedup: maximise the sum of priority weight x weight x S; non-hard jobs may be left out.
    min_power: every job admitted; minimise total watts (caps of used devices + idle_w of the rest).
    """
    w = Workload.load(workload)
    must_admit = {j.id for j in w.jobs if j.priority in (Priority.critical, Priority.high)}
    if w.objective == "min_power":
        must_admit = {j.id for j in w.jobs}
    per_job = []
    for job in w.jobs:
        opts = _job_options(w, job)
        if job.id not in must_admit:
            opts = [None, *opts]
        if not opts:
            return None, {}
        per_job.append(opts)

    groups = {g.id: g for g in w.devices}
    best_value: float | None = None
    best: Assignment = {}
    maximise = w.objective != "min_power"

    def power_of(used: dict[str, int], caps: dict[str, float]) -> tuple[float, dict[str, float]]:
        total, domains = 0.0, {}
        for g in w.devices:
            draw = caps.get(g.id, 0.0) + (g.count - used.get(g.id, 0)) * g.idle_w
            total += draw
            if g.domain is not None:
                domains[g.domain] = domains.get(g.domain, 0.0) + draw
        return total, domains

    def finish(chosen: list) -> None:
        nonlocal best_value, best
        used: dict[str, int] = {}
        caps: dict[str, float] = {}
        value = 0.0
        for opt in chosen:
            if opt is None:
                continue
            value += opt["value"]
            for gid, c in opt["used"].items():
                used[gid] = used.get(gid, 0) + c
            for gid, c in opt["cap_w"].items():
                caps[gid] = caps.get(gid, 0.0) + c
        total, domains = power_of(used, caps)
        budget = w.power.budget_w
        if budget is not None and total > budget + max(_TOL * budget, _TOL):
            return
        for name, limit in w.power.domains.items():
            if domains.get(name, 0.0) > limit + max(_TOL * limit, _TOL):
                return
        objective = value if maximise else total
        better = best_value is None or (objective > best_value + 1e-12 if maximise else objective < best_value - 1e-12)
        if better:
            best_value = objective
            best = {
                job.id: ({} if opt is None else dict(opt["alloc"])) for job, opt in zip(w.jobs, chosen, strict=True)
            }

    def search(k: int, left: dict[str, int], chosen: list) -> None:
        if k == len(per_job):
            finish(chosen)
            return
        for opt in per_job[k]:
            if opt is not None and any(c > left[gid] for gid, c in opt["used"].items()):
                continue
            if opt is not None:
                for gid, c in opt["used"].items():
                    left[gid] -= c
            chosen.append(opt)
            search(k + 1, left, chosen)
            chosen.pop()
            if opt is not None:
                for gid, c in opt["used"].items():
                    left[gid] += c

    search(0, {gid: g.count for gid, g in groups.items()}, [])
    return best_value, best


def tiny_case(workload: dict) -> tuple[Workload, float] | None:
    """A tiny weighted_speedup workload with its optimum by exhaustive search, or None where there is nothing to
    compare (another objective, nothing feasible, or no first plan)."""
    w = Workload.load(workload)
    if w.objective != "weighted_speedup":
        return None
    optimum, _ = brute_force(w)
    if optimum is None or not construct(ModelData(w)):
        return None
    return w, optimum
