"""Exhaustive search for the fairness objectives on TINY workloads (sizes of tests/oracle.py).

Written again from the definitions (docs/guides/fairness.md), sharing nothing with optsched.model or optsched.solve:
S_j^solo is the best speedup of the job alone under the budgets; every plan admits every job (deadlines met);
max_min_speedup is min_j S_j / (weight_j S_j^solo), team_max_min min over teams of the team's summed S_j / S_j^solo
divided by its share.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from optsched.schema.workload import PRIORITY_WEIGHT, Priority, Workload
from tests.oracle import _job_options

_TOL = 1e-6


@dataclass(frozen=True)
class FairSearch:
    solo: dict[str, float]  # job id -> S^solo
    plans: list[tuple[dict[str, float], float]]  # every feasible all-admitting plan: (job id -> S, weighted speedup)


def _speedup(job, option) -> float:
    return option["value"] / (PRIORITY_WEIGHT[Priority(job.priority)] * job.weight)


def _within_budgets(w: Workload, used: dict[str, int], caps: dict[str, float]) -> bool:
    total, domains = 0.0, {}
    for g in w.devices:
        draw = caps.get(g.id, 0.0) + (g.count - used.get(g.id, 0)) * g.idle_w
        total += draw
        if g.domain is not None:
            domains[g.domain] = domains.get(g.domain, 0.0) + draw
    if w.power.budget_w is not None and total > w.power.budget_w + max(_TOL * w.power.budget_w, _TOL):
        return False
    return all(domains.get(d, 0.0) <= limit + max(_TOL * limit, _TOL) for d, limit in w.power.domains.items())


def search(workload: Any) -> FairSearch:
    w = Workload.load(workload)
    solo = {}
    for job in w.jobs:
        alone = job.model_copy(update={"deadline_hours": None})
        solo[job.id] = max(
            (_speedup(alone, o) for o in _job_options(w, alone) if _within_budgets(w, o["used"], o["cap_w"])),
            default=0.0,
        )
    per_job = [_job_options(w, job) for job in w.jobs]
    plans = []
    for chosen in itertools.product(*per_job):
        used: dict[str, int] = {}
        caps: dict[str, float] = {}
        for o in chosen:
            for gid, c in o["used"].items():
                used[gid] = used.get(gid, 0) + c
            for gid, c in o["cap_w"].items():
                caps[gid] = caps.get(gid, 0.0) + c
        if any(used.get(g.id, 0) > g.count for g in w.devices) or not _within_budgets(w, used, caps):
            continue
        speeds = {job.id: _speedup(job, o) for job, o in zip(w.jobs, chosen, strict=True)}
        plans.append((speeds, sum(o["value"] for o in chosen)))
    return FairSearch(solo, plans)


def fairness(workload: Any, solo: dict[str, float], speedups: dict[str, float]) -> float:
    w = Workload.load(workload)
    x = {job.id: speedups[job.id] / solo[job.id] for job in w.jobs}
    if w.objective == "max_min_speedup":
        return min(x[job.id] / job.weight for job in w.jobs)
    teams: dict[str, float] = {}
    for job in w.jobs:
        team = job.team or job.id
        teams[team] = teams.get(team, 0.0) + x[job.id]
    raw = {t: (w.teams[t] if w.teams else 1.0) for t in teams}
    return min(value / (raw[t] / sum(raw.values())) for t, value in teams.items())


def max_min(workload: Any) -> tuple[float | None, FairSearch]:
    """(the max-min fairness value, or None when no plan admits every job; the search)."""
    found = search(workload)
    values = [fairness(workload, found.solo, s) for s, _ in found.plans]
    return (max(values) if values else None), found


def most_weighted(workload: Any, found: FairSearch, floor: float) -> float:
    """The most weighted speedup among the plans whose fairness is at least `floor`."""
    return max((ws for s, ws in found.plans if fairness(workload, found.solo, s) >= floor), default=-1.0)
