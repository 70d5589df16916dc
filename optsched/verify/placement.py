"""Independent plan verifier: recompute everything from the placements alone and list every violation.

This module deliberately shares no code with the model or the solver; it works only from the
workload and plan schemas and the written semantics:

* a device serves at most one job; an admitted job gets min_devices..max_devices eligible devices;
* a device at level l for job j runs at ``l.speed * j.speed_on.get(model, 1.0)`` and draws ``l.cap_w``;
  an unused device draws the group's ``idle_w``;
* heterogeneous Amdahl: ``S = 1 / ((1-p)/s_host + p/R)``, ``s_host`` the fastest allocated device,
  ``R`` the summed speed of all allocated devices; ``runtime_hours = work_hours / S``;
  each device carries ``speed / R`` of the parallel part;
* critical/high jobs must be admitted; admitted jobs with a deadline must meet it;
* objectives: ``weighted_speedup`` (sum of priority weight x weight x S over admitted jobs),
  ``min_power`` (every job admitted; total watts), and the fairness objectives (every job admitted):
  ``max_min_speedup`` min_j S_j / (weight_j S_j^solo) and ``team_max_min`` min over teams T of
  (sum_{j in T} S_j / S_j^solo) / share_T, shares the workload's ``teams`` over their sum (equal without them),
  S_j^solo the plan's ``solo_speedup`` of each job (a solve of the job alone; checked here only to be positive
  and at most the job's speedup on its fastest eligible devices, which no budget can raise).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from optsched.schema.errors import FieldError, InvalidPlan
from optsched.schema.names import Family, constraint_name
from optsched.schema.plan import FEASIBLE_STATUSES, Allocation, Placement, Plan
from optsched.schema.tolerances import DEADLINE_RTOL
from optsched.schema.workload import (
    FAIR_OBJECTIVES,
    PRIORITY_WEIGHT,
    DeviceGroup,
    Job,
    PowerLevel,
    Priority,
    Workload,
    field_errors,
)

__all__ = [
    "verify",
    "evaluate",
    "load_plan",
    "eligible",
    "ineligibility",
    "device_speed",
    "amdahl_speedup",
    "find_level",
    "job_weight",
]


# --------------------------------------------------------------------------------------------
# Pure formula helpers
# --------------------------------------------------------------------------------------------


def ineligibility(job: Job, group: DeviceGroup) -> str | None:
    """Why devices of `group` cannot serve `job` (memory in GB, allowed models), or None if they can."""
    if job.memory_gb is not None:
        if group.memory_gb is None:
            return f"job needs {job.memory_gb:g} GB per device but group memory is unknown"
        if group.memory_gb < job.memory_gb:
            return f"job needs {job.memory_gb:g} GB per device but group has {group.memory_gb:g} GB"
    if job.allowed_models is not None and group.model not in job.allowed_models:
        return f"model {group.model!r} is not in the job's allowed_models {list(job.allowed_models)}"
    return None


def eligible(job: Job, group: DeviceGroup) -> bool:
    """A group is eligible when its memory (GB) covers the job's and its model is allowed."""
    return ineligibility(job, group) is None


def device_speed(job: Job, group: DeviceGroup, level: PowerLevel) -> float:
    """Speed of one device for the job: level speed x the job's speed_on multiplier for the model (dimensionless)."""
    return level.speed * job.speed_on.get(group.model, 1.0)


def amdahl_speedup(parallel_fraction: float, units: Iterable[tuple[int, float]]) -> tuple[float, float, float]:
    """(S, s_host, R) for (count, speed) units: S = 1 / ((1-p)/s_host + p/R); all zero when no device."""
    units = [(c, s) for c, s in units if c > 0]
    if not units:
        return 0.0, 0.0, 0.0
    s_host = max(s for _, s in units)
    total = sum(c * s for c, s in units)
    p = parallel_fraction
    return 1.0 / ((1.0 - p) / s_host + p / total), s_host, total


def find_level(
    group: DeviceGroup, cap_w: float, speed: float | None = None, rel_tol: float = 1e-6
) -> PowerLevel | None:
    """The group's power level with this cap (W); among equal caps the one matching `speed`, else the fastest."""
    matches = [lv for lv in group.power_levels if math.isclose(lv.cap_w, cap_w, rel_tol=rel_tol, abs_tol=rel_tol)]
    if not matches:
        return None
    return max(matches, key=lambda lv: (speed is not None and math.isclose(lv.speed, speed, rel_tol=1e-9), lv.speed))


def job_weight(job: Job) -> float:
    """Objective weight of a job: PRIORITY_WEIGHT[priority] x weight (dimensionless)."""
    return PRIORITY_WEIGHT[Priority(job.priority)] * job.weight


def evaluate(workload: Workload | Any, allocations: Mapping[str, Any]) -> dict[str, Any]:
    """Recompute every quantity of an assignment.

    `allocations` maps job id -> either a mapping {(group_id, cap_w): count} or an iterable of
    (group_id, cap_w, count); a job absent or with no device is not admitted. Returns a dict with
    ``jobs`` (per job: admitted, devices, s_host, R, speedup, runtime_hours, meets_deadline,
    allocations [(group, cap_w, count, speed, work_fraction)]), ``used`` (group -> devices),
    ``power_w``, ``power_by_domain``, ``weighted_speedup`` and ``objective`` (for the workload's objective).
    Raises KeyError for an unknown job or group and ValueError for a cap no level of the group has.
    Feasibility is not judged here; `verify` does that.
    """
    w = Workload.load(workload)
    groups = {g.id: g for g in w.devices}
    jobs = {j.id: j for j in w.jobs}
    resolved: dict[str, list[tuple[DeviceGroup, PowerLevel, int]]] = {}
    for job_id, spec in allocations.items():
        if job_id not in jobs:
            raise KeyError(f"unknown job {job_id!r}")
        items = [(k[0], k[1], c) for k, c in spec.items()] if isinstance(spec, Mapping) else list(spec)
        rows = []
        for gid, cap, count in items:
            if gid not in groups:
                raise KeyError(f"unknown device group {gid!r}")
            level = find_level(groups[gid], cap)
            if level is None:
                raise ValueError(f"device group {gid!r} has no power level with cap {cap:g} W")
            if count:
                rows.append((groups[gid], level, int(count)))
        resolved[job_id] = rows
    return _evaluate_resolved(w, resolved)


def _evaluate_resolved(
    w: Workload, resolved: Mapping[str, list[tuple[DeviceGroup, PowerLevel, int]]]
) -> dict[str, Any]:
    """Core of `evaluate` on resolved (group, level, count) rows per job."""
    used: dict[str, int] = {g.id: 0 for g in w.devices}
    cap_draw: dict[str, float] = {g.id: 0.0 for g in w.devices}
    out_jobs: dict[str, dict[str, Any]] = {}
    weighted = 0.0
    for job in w.jobs:
        rows = resolved.get(job.id, [])
        for g, lv, c in rows:
            used[g.id] += c
            cap_draw[g.id] += c * lv.cap_w
        units = [(c, device_speed(job, g, lv)) for g, lv, c in rows]
        S, s_host, R = amdahl_speedup(job.parallel_fraction, units)
        admitted = S > 0
        runtime = job.work_hours / S if admitted else None
        meets = None
        if job.deadline_hours is not None and runtime is not None:
            meets = runtime <= job.deadline_hours * (1 + DEADLINE_RTOL)
        out_jobs[job.id] = {
            "admitted": admitted,
            "devices": sum(c for _, _, c in rows),
            "s_host": s_host,
            "R": R,
            "speedup": S,
            "runtime_hours": runtime,
            "meets_deadline": meets,
            "allocations": [
                (g.id, lv.cap_w, c, device_speed(job, g, lv), device_speed(job, g, lv) / R) for g, lv, c in rows
            ],
        }
        weighted += job_weight(job) * S
    group_power = {g.id: cap_draw[g.id] + max(g.count - used[g.id], 0) * g.idle_w for g in w.devices}
    by_domain: dict[str, float] = defaultdict(float)
    for g in w.devices:
        if g.domain is not None:
            by_domain[g.domain] += group_power[g.id]
    total = sum(group_power.values())
    objective = total if w.objective == "min_power" else weighted
    if w.objective in FAIR_OBJECTIVES:
        objective = math.nan  # needs each job's S^solo, which only a plan reports (verify recomputes it there)
    return {
        "jobs": out_jobs,
        "used": used,
        "group_power_w": group_power,
        "power_w": total,
        "power_by_domain": dict(by_domain),
        "weighted_speedup": weighted,
        "objective": objective,
    }


# --------------------------------------------------------------------------------------------
# Verification context: the plan resolved against the workload, recomputed once
# --------------------------------------------------------------------------------------------


@dataclass
class _Alloc:
    index: int  # of the placement in plan.placements
    placement: Placement
    alloc: Allocation
    group: DeviceGroup | None
    level: PowerLevel | None
    job: Job | None


@dataclass
class _Ctx:
    w: Workload
    plan: Plan
    rel_tol: float
    groups: dict[str, DeviceGroup]
    jobs: dict[str, Job]
    allocs: list[_Alloc] = field(default_factory=list)
    # recomputation (from resolvable allocations only)
    used: dict[str, int] = field(default_factory=dict)
    group_power: dict[str, float] = field(default_factory=dict)
    power_w: float = 0.0
    power_by_domain: dict[str, float] = field(default_factory=dict)
    metrics: dict[int, tuple[float, float, float]] = field(default_factory=dict)  # placement index -> (S, s_host, R)
    weighted_speedup: float = 0.0
    _rows_of: dict[int, list[_Alloc]] = field(default_factory=dict, repr=False)
    _rows_built_for: int = field(default=-1, repr=False)

    def close(self, a: float, b: float) -> bool:
        return math.isclose(a, b, rel_tol=self.rel_tol, abs_tol=self.rel_tol)

    def within(self, value: float, limit: float) -> bool:
        return value <= limit + max(self.rel_tol * abs(limit), self.rel_tol)

    def rows(self, index: int) -> list[_Alloc]:
        """The allocations of placement `index` (indexed once: a scan per placement is quadratic in the plan)."""
        if self._rows_built_for != len(self.allocs):
            self._rows_of = {}
            for a in self.allocs:
                self._rows_of.setdefault(a.index, []).append(a)
            self._rows_built_for = len(self.allocs)
        return self._rows_of.get(index, [])


def _build_context(w: Workload, plan: Plan, rel_tol: float) -> _Ctx:
    ctx = _Ctx(w=w, plan=plan, rel_tol=rel_tol, groups={g.id: g for g in w.devices}, jobs={j.id: j for j in w.jobs})
    for i, pl in enumerate(plan.placements):
        job = ctx.jobs.get(pl.job)
        for a in pl.allocations:
            g = ctx.groups.get(a.device)
            lv = find_level(g, a.cap_w, _level_speed_hint(job, g, a.speed), rel_tol) if g is not None else None
            ctx.allocs.append(_Alloc(i, pl, a, g, lv, job))
    # Devices and power: every resolvable allocation occupies devices, admitted or not.
    ctx.used = {g.id: 0 for g in w.devices}
    cap_draw = {g.id: 0.0 for g in w.devices}
    for r in ctx.allocs:
        if r.group is not None and r.level is not None:
            ctx.used[r.group.id] += r.alloc.count
            cap_draw[r.group.id] += r.alloc.count * r.level.cap_w
    ctx.group_power = {g.id: cap_draw[g.id] + max(g.count - ctx.used[g.id], 0) * g.idle_w for g in w.devices}
    ctx.power_w = sum(ctx.group_power.values())
    by_domain: dict[str, float] = defaultdict(float)
    for g in w.devices:
        if g.domain is not None:
            by_domain[g.domain] += ctx.group_power[g.id]
    ctx.power_by_domain = dict(by_domain)
    # Per admitted placement of a known job: Amdahl metrics from recomputed speeds.
    for i, pl in enumerate(plan.placements):
        job = ctx.jobs.get(pl.job)
        if job is None or not pl.admitted:
            continue
        units = [
            (r.alloc.count, device_speed(job, r.group, r.level))
            for r in ctx.rows(i)
            if r.group is not None and r.level is not None
        ]
        ctx.metrics[i] = amdahl_speedup(job.parallel_fraction, units)
        ctx.weighted_speedup += job_weight(job) * ctx.metrics[i][0]
    return ctx


def _level_speed_hint(job: Job | None, group: DeviceGroup, reported_speed: float) -> float | None:
    """The level speed the reported device speed implies (undoing speed_on), to pick among equal caps."""
    if job is None:
        return None
    return reported_speed / job.speed_on.get(group.model, 1.0)


def _job_label(pl: Placement) -> str:
    return f"job {pl.job!r}"


# --------------------------------------------------------------------------------------------
# Checks: one function per rule family, each returns violation strings
# --------------------------------------------------------------------------------------------


def check_placement_coverage(ctx: _Ctx) -> list[str]:
    """Every placement names a workload job and every job has exactly one placement."""
    out: list[str] = []
    seen: dict[str, int] = defaultdict(int)
    for pl in ctx.plan.placements:
        if pl.job not in ctx.jobs:
            out.append(f"job {pl.job!r}: placement for a job that is not in the workload")
        seen[pl.job] += 1
    for job in ctx.w.jobs:
        n = seen.get(job.id, 0)
        if n == 0:
            out.append(f"job {job.id!r}: no placement in the plan (every job needs exactly one)")
        elif n > 1:
            out.append(f"job {job.id!r}: {n} placements in the plan (every job needs exactly one)")
    return out


def check_allocation_references(ctx: _Ctx) -> list[str]:
    """Each allocation names an existing device group and a cap_w (W) equal to one of its power levels."""
    out: list[str] = []
    for r in ctx.allocs:
        if r.group is None:
            out.append(f"{_job_label(r.placement)}: allocation on unknown device group {r.alloc.device!r}")
        elif r.level is None:
            caps = ", ".join(f"{lv.cap_w:g}" for lv in r.group.power_levels)
            out.append(
                f"{_job_label(r.placement)}: device {r.group.id!r} has no power level with cap {r.alloc.cap_w:g} W"
                f" (levels: {caps} W)"
            )
    return out


def check_allocation_speeds(ctx: _Ctx) -> list[str]:
    """Reported per-device speed equals level speed x speed_on[model] (dimensionless, relative tolerance)."""
    out: list[str] = []
    for r in ctx.allocs:
        if r.job is None or r.group is None or r.level is None:
            continue
        expected = device_speed(r.job, r.group, r.level)
        if not ctx.close(r.alloc.speed, expected):
            out.append(
                f"{_job_label(r.placement)}: device {r.group.id!r} at {r.level.cap_w:g} W reports speed"
                f" {r.alloc.speed:g}, expected {expected:g}"
            )
    return out


def check_eligibility(ctx: _Ctx) -> list[str]:
    """Jobs only get devices whose memory (GB) covers the job's and whose model the job allows."""
    out: list[str] = []
    for r in ctx.allocs:
        if r.job is None or r.group is None:
            continue
        why = ineligibility(r.job, r.group)
        if why is not None:
            out.append(f"{_job_label(r.placement)}: device {r.group.id!r} is not eligible: {why}")
    return out


def _allocs_by_group(ctx: _Ctx) -> dict[str, list[_Alloc]]:
    groups: dict[str, list[_Alloc]] = defaultdict(list)
    for r in ctx.allocs:
        if r.group is not None and r.level is not None:
            groups[r.group.id].append(r)
    return groups


def check_capacity(ctx: _Ctx) -> list[str]:
    """Devices allocated from a group, summed over all jobs, do not exceed the group's count (devices)."""
    out: list[str] = []
    by_group: dict[None, dict[str, list[_Alloc]]] = {}  # built once, on the first group over its count
    for g in ctx.w.devices:
        if ctx.used[g.id] > g.count:
            users: defaultdict[str, int] = defaultdict(int)
            for r in by_group.setdefault(None, _allocs_by_group(ctx)).get(g.id, ()):
                users[r.placement.job] += r.alloc.count
            detail = ", ".join(f"{j!r}: {c}" for j, c in users.items())
            out.append(f"{constraint_name(Family.device_capacity, g.id)}: device {g.id!r}: {ctx.used[g.id]} devices "
                       f"allocated but the group has {g.count} ({detail})")
    return out


def check_device_counts(ctx: _Ctx) -> list[str]:
    """An admitted job gets between min_devices and max_devices devices in total (devices)."""
    out: list[str] = []
    for pl in ctx.plan.placements:
        job = ctx.jobs.get(pl.job)
        if job is None or not pl.admitted:
            continue
        n = sum(a.count for a in pl.allocations)
        if n < job.min_devices:
            out.append(f"{constraint_name(Family.admission_min, job.id)}: job {job.id!r}: admitted with {n} devices, "
                       f"fewer than min_devices {job.min_devices}")
        if job.max_devices is not None and n > job.max_devices:
            out.append(f"{constraint_name(Family.admission_max, job.id)}: job {job.id!r}: admitted with {n} devices, "
                       f"more than max_devices {job.max_devices}")
    return out


def check_admission(ctx: _Ctx) -> list[str]:
    """Critical/high jobs (and, under min_power, all jobs) are admitted; non-admitted jobs hold no device."""
    out: list[str] = []
    admitted = {pl.job for pl in ctx.plan.placements if pl.admitted}
    for job in ctx.w.jobs:
        if job.id in admitted:
            continue
        if job.is_hard:
            out.append(f"{constraint_name(Family.must_run, job.id)}: job {job.id!r}: {Priority(job.priority).value} "
                       "priority job is not admitted")
        elif ctx.w.objective == "min_power" or ctx.w.objective in FAIR_OBJECTIVES:
            out.append(f"{constraint_name(Family.must_run, job.id)}: job {job.id!r}: objective {ctx.w.objective} "
                       "requires every job to be admitted")
    for pl in ctx.plan.placements:
        if not pl.admitted and pl.allocations:
            n = sum(a.count for a in pl.allocations)
            out.append(f"job {pl.job!r}: not admitted but holds {n} device(s)")
    return out


def check_deadlines(ctx: _Ctx) -> list[str]:
    """An admitted job with deadline_hours finishes in time: work_hours / S <= deadline_hours (hours)."""
    out: list[str] = []
    for i, pl in enumerate(ctx.plan.placements):
        job = ctx.jobs.get(pl.job)
        if job is None or not pl.admitted or job.deadline_hours is None:
            continue
        S = ctx.metrics[i][0]
        if S <= 0:
            continue  # no usable device: reported by the device-count check
        runtime = job.work_hours / S
        if runtime > job.deadline_hours * (1 + ctx.rel_tol):
            out.append(
                f"{constraint_name(Family.deadline, job.id)}: job {job.id!r}: misses its deadline: "
                f"runtime {runtime:.6g} h > deadline {job.deadline_hours:g} h"
            )
    return out


def check_power_budgets(ctx: _Ctx) -> list[str]:
    """Total draw (caps of used devices + idle_w of the rest, W) fits power.budget_w and each domain budget."""
    out: list[str] = []
    budget = ctx.w.power.budget_w
    if budget is not None and not ctx.within(ctx.power_w, budget):
        out.append(f"{constraint_name(Family.power_budget, None)}: power: total draw {ctx.power_w:.6g} W exceeds "
                   f"budget_w {budget:g} W")
    for name, limit in sorted(ctx.w.power.domains.items()):
        draw = ctx.power_by_domain.get(name, 0.0)
        if not ctx.within(draw, limit):
            members = [g.id for g in ctx.w.devices if g.domain == name]
            out.append(f"{constraint_name(Family.power_budget, name)}: power domain {name!r}: draw {draw:.6g} W "
                       f"exceeds its budget {limit:g} W (devices {members})")
    return out


def check_job_metrics(ctx: _Ctx) -> list[str]:
    """Reported priority, deadline_hours, speedup S, runtime_hours (h) and meets_deadline match recomputation."""
    out: list[str] = []
    for i, pl in enumerate(ctx.plan.placements):
        job = ctx.jobs.get(pl.job)
        if job is None:
            continue
        label = f"job {job.id!r}"
        if pl.priority != Priority(job.priority).value:
            out.append(f"{label}: reports priority {pl.priority!r}, workload says {Priority(job.priority).value!r}")
        if pl.deadline_hours != job.deadline_hours and not (
            pl.deadline_hours is not None
            and job.deadline_hours is not None
            and ctx.close(pl.deadline_hours, job.deadline_hours)
        ):
            out.append(f"{label}: reports deadline_hours {pl.deadline_hours}, workload says {job.deadline_hours}")
        if not pl.admitted:
            if not ctx.close(pl.speedup, 0.0):
                out.append(f"{label}: not admitted but reports speedup {pl.speedup:g} (expected 0)")
            if pl.runtime_hours is not None:
                out.append(f"{label}: not admitted but reports runtime_hours {pl.runtime_hours:g} (expected null)")
            if pl.meets_deadline is True:
                out.append(f"{label}: not admitted but reports meets_deadline true")
            continue
        S = ctx.metrics[i][0]
        if S <= 0:
            continue  # nothing to compare against; the device-count check reports it
        runtime = job.work_hours / S
        if not ctx.close(pl.speedup, S):
            out.append(f"{label}: reports speedup {pl.speedup:.9g}, recomputed {S:.9g}")
        if pl.runtime_hours is None or not ctx.close(pl.runtime_hours, runtime):
            out.append(f"{label}: reports runtime_hours {pl.runtime_hours}, recomputed {runtime:.9g} h")
        if job.deadline_hours is None:
            if pl.meets_deadline is not None:
                out.append(f"{label}: has no deadline but reports meets_deadline {pl.meets_deadline}")
        else:
            meets = runtime <= job.deadline_hours * (1 + ctx.rel_tol)
            if pl.meets_deadline is not meets:
                out.append(f"{label}: reports meets_deadline {pl.meets_deadline}, recomputed {meets}")
    return out


def check_work_fractions(ctx: _Ctx) -> list[str]:
    """Each device's work_fraction equals its speed / R, and count x work_fraction sums to 1 over the job."""
    out: list[str] = []
    for i, pl in enumerate(ctx.plan.placements):
        job = ctx.jobs.get(pl.job)
        if job is None or not pl.admitted or not pl.allocations:
            continue
        R = ctx.metrics[i][2]
        for r in ctx.rows(i):
            if r.group is None or r.level is None or R <= 0:
                continue
            expected = device_speed(job, r.group, r.level) / R
            if not ctx.close(r.alloc.work_fraction, expected):
                out.append(
                    f"job {job.id!r}: device {r.group.id!r} at {r.level.cap_w:g} W reports work_fraction"
                    f" {r.alloc.work_fraction:.9g} per device, expected speed/R = {expected:.9g}"
                )
        total = sum(a.count * a.work_fraction for a in pl.allocations)
        if not ctx.close(total, 1.0):
            out.append(f"job {job.id!r}: work fractions (count x work_fraction) sum to {total:.9g}, not 1")
    return out


def check_reported_power(ctx: _Ctx) -> list[str]:
    """plan.power_w (W) and power_by_domain (W per domain) equal the recomputed draw."""
    out: list[str] = []
    if not ctx.close(ctx.plan.power_w, ctx.power_w):
        out.append(f"power: plan reports power_w {ctx.plan.power_w:.9g} W, recomputed {ctx.power_w:.9g} W")
    for name, value in sorted(ctx.plan.power_by_domain.items()):
        if name not in ctx.power_by_domain and name not in ctx.w.power.domains:
            out.append(f"power domain {name!r}: reported but no device group or budget has that domain")
        elif not ctx.close(value, ctx.power_by_domain.get(name, 0.0)):
            out.append(
                f"power domain {name!r}: plan reports {value:.9g} W, recomputed "
                f"{ctx.power_by_domain.get(name, 0.0):.9g} W"
            )
    for name in sorted(ctx.w.power.domains):
        if name in ctx.power_by_domain and name not in ctx.plan.power_by_domain:
            out.append(f"power domain {name!r}: has a budget and devices but is missing from power_by_domain")
    return out


def check_device_use(ctx: _Ctx) -> list[str]:
    """plan.devices lists each group once with used/idle devices, power_w (W) and echoes matching the workload."""
    out: list[str] = []
    if not ctx.plan.devices and ctx.plan.status not in FEASIBLE_STATUSES:
        return out
    seen: dict[str, int] = defaultdict(int)
    for du in ctx.plan.devices:
        seen[du.device] += 1
        g = ctx.groups.get(du.device)
        label = f"device {du.device!r}"
        if g is None:
            out.append(f"{label}: listed in plan.devices but not in the workload")
            continue
        used = ctx.used[g.id]
        if du.used != used:
            out.append(f"{label}: plan reports {du.used} used, placements allocate {used}")
        if du.idle != g.count - used:
            out.append(f"{label}: plan reports {du.idle} idle, expected {g.count - used} of {g.count}")
        if not ctx.close(du.power_w, ctx.group_power[g.id]):
            out.append(f"{label}: plan reports power_w {du.power_w:.9g} W, recomputed {ctx.group_power[g.id]:.9g} W")
        if du.model != g.model or du.domain != g.domain:
            out.append(
                f"{label}: echoes model/domain {du.model!r}/{du.domain!r}, workload has {g.model!r}/{g.domain!r}"
            )
        if not ctx.close(du.idle_w, g.idle_w):
            out.append(f"{label}: echoes idle_w {du.idle_w:g} W, workload has {g.idle_w:g} W")
        if du.memory_gb != g.memory_gb and not (
            du.memory_gb is not None and g.memory_gb is not None and ctx.close(du.memory_gb, g.memory_gb)
        ):
            out.append(f"{label}: echoes memory_gb {du.memory_gb}, workload has {g.memory_gb}")
        levels = [(lv.cap_w, lv.speed) for lv in g.power_levels]
        if len(du.power_levels) != len(levels) or not all(
            ctx.close(a[0], b[0]) and ctx.close(a[1], b[1]) for a, b in zip(du.power_levels, levels, strict=True)
        ):
            out.append(f"{label}: echoes power_levels {list(du.power_levels)}, workload has {levels}")
    for g in ctx.w.devices:
        if seen.get(g.id, 0) == 0:
            out.append(f"device {g.id!r}: missing from plan.devices")
        elif seen[g.id] > 1:
            out.append(f"device {g.id!r}: listed {seen[g.id]} times in plan.devices")
    return out


def check_objective(ctx: _Ctx) -> list[str]:
    """objective_name is the workload's; weighted_speedup and objective equal their recomputed values."""
    out: list[str] = []
    plan = ctx.plan
    if plan.objective_name != ctx.w.objective:
        out.append(f"objective: plan says {plan.objective_name!r}, workload asks for {ctx.w.objective!r}")
    if not ctx.close(plan.weighted_speedup, ctx.weighted_speedup):
        out.append(
            f"objective: plan reports weighted_speedup {plan.weighted_speedup:.9g}, recomputed "
            f"{ctx.weighted_speedup:.9g}"
        )
    expected = ctx.power_w if ctx.w.objective == "min_power" else ctx.weighted_speedup
    if ctx.w.objective in FAIR_OBJECTIVES:
        recomputed = fairness(ctx)
        if recomputed is None:
            return out  # check_fairness names the missing solo speedups
        expected = recomputed
    if plan.objective is None:
        if plan.status in FEASIBLE_STATUSES:
            out.append(f"objective: status {plan.status.value} but objective is null (recomputed {expected:.9g})")
    elif not ctx.close(plan.objective, expected):
        out.append(f"objective: plan reports {ctx.w.objective} = {plan.objective:.9g}, recomputed {expected:.9g}")
    return out


def _speedups(ctx: _Ctx) -> dict[str, float]:
    """Job id -> recomputed S (0 when not admitted)."""
    out = {job.id: 0.0 for job in ctx.w.jobs}
    for i, pl in enumerate(ctx.plan.placements):
        if i in ctx.metrics:
            out[pl.job] = ctx.metrics[i][0]
    return out


def _shares(w: Workload) -> dict[str, float]:
    """Team -> share: `teams` over their sum across the teams with jobs, else equal; a job without a team is a
    team of its own, named after it."""
    present = list(dict.fromkeys(j.id if j.team is None else j.team for j in w.jobs))
    raw = {t: (w.teams.get(t, 0.0) if w.teams else 1.0) for t in present}
    total = sum(raw.values())
    return {t: v / total for t, v in raw.items()} if total > 0 else {}


def fairness(ctx: _Ctx) -> float | None:
    """The fairness objective's value recomputed from the placements and their solo speedups (None when one is
    missing or not positive)."""
    solo = {pl.job: pl.solo_speedup for pl in ctx.plan.placements}
    if any(not (solo.get(job.id) or 0.0) > 0 for job in ctx.w.jobs):
        return None
    s = _speedups(ctx)
    normalised = {job.id: s[job.id] / float(solo[job.id] or 1.0) for job in ctx.w.jobs}
    if ctx.w.objective == "max_min_speedup":
        return min((normalised[job.id] / job.weight for job in ctx.w.jobs), default=0.0)
    teams: dict[str, float] = defaultdict(float)
    for job in ctx.w.jobs:
        teams[job.id if job.team is None else job.team] += normalised[job.id]
    shares = _shares(ctx.w)
    return min((value / shares[team] for team, value in teams.items()), default=0.0)


def _fastest(job: Job, w: Workload) -> float:
    """The job's speedup on its fastest eligible devices at their fastest levels, up to max_devices (no budget)."""
    speeds = sorted(
        ((max(device_speed(job, g, lv) for lv in g.power_levels), g.count) for g in w.devices if eligible(job, g)),
        reverse=True,
    )
    left = job.max_devices if job.max_devices is not None else sum(c for _, c in speeds)
    units = []
    for speed, count in speeds:
        take = min(count, left)
        units.append((take, speed))
        left -= take
    return amdahl_speedup(job.parallel_fraction, units)[0]


def check_fairness(ctx: _Ctx) -> list[str]:
    """Under a fairness objective each job reports a solo speedup in (0, fastest], and `fairness` equals the value
    recomputed from the placements; teams report the shares, devices and normalised speedups recomputed here."""
    out: list[str] = []
    plan, w = ctx.plan, ctx.w
    fair = w.objective in FAIR_OBJECTIVES
    if fair and plan.status in FEASIBLE_STATUSES:
        for pl in plan.placements:
            job = ctx.jobs.get(pl.job)
            if job is None:
                continue
            if pl.solo_speedup is None or not pl.solo_speedup > 0:
                out.append(f"{constraint_name(Family.fairness, job.id)}: job {job.id!r}: no positive solo_speedup, "
                           f"which {w.objective} normalises by")
            elif not ctx.within(pl.solo_speedup, _fastest(job, w)):
                out.append(f"{constraint_name(Family.fairness, job.id)}: job {job.id!r}: solo_speedup "
                           f"{pl.solo_speedup:.9g} above its speedup on its fastest devices {_fastest(job, w):.9g}")
        value = fairness(ctx)
        if value is not None and (plan.fairness is None or not ctx.close(plan.fairness, value)):
            out.append(f"fairness: plan reports {plan.fairness}, recomputed {value:.9g}")
    if plan.teams:
        shares, s = _shares(w), _speedups(ctx)
        held: dict[str, int] = defaultdict(int)
        for i, pl in enumerate(plan.placements):
            job = ctx.jobs.get(pl.job)
            if job is not None and i in ctx.metrics:
                held[job.id if job.team is None else job.team] += sum(a.count for a in pl.allocations)
        solo = {pl.job: pl.solo_speedup for pl in plan.placements}
        for team in plan.teams:
            if team.team not in shares:
                out.append(f"team {team.team!r}: no job of the workload is in it")
                continue
            if not ctx.close(team.share, shares[team.team]) or team.devices != held[team.team]:
                out.append(f"team {team.team!r}: reports share {team.share:.9g} and {team.devices} devices, "
                           f"recomputed {shares[team.team]:.9g} and {held[team.team]}")
            jobs = [j for j in w.jobs if (j.id if j.team is None else j.team) == team.team]
            if fair and team.normalised_speedup is not None and all(solo.get(j.id) for j in jobs):
                value = sum(s[j.id] / float(solo[j.id] or 1.0) for j in jobs)
                if not ctx.close(team.normalised_speedup, value):
                    out.append(f"team {team.team!r}: reports normalised speedup {team.normalised_speedup:.9g}, "
                               f"recomputed {value:.9g}")
    return out


CHECKS: tuple[Callable[[_Ctx], list[str]], ...] = (
    check_placement_coverage,
    check_allocation_references,
    check_allocation_speeds,
    check_eligibility,
    check_capacity,
    check_device_counts,
    check_admission,
    check_deadlines,
    check_power_budgets,
    check_job_metrics,
    check_work_fractions,
    check_reported_power,
    check_device_use,
    check_objective,
    check_fairness,
)


# --------------------------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------------------------


def read_plan_document(source: str | Path) -> Any:
    """The parsed JSON of a plan given as JSON text or as a file path; InvalidPlan says what could not be read."""
    text = str(source)
    try:
        raw = text if isinstance(source, str) and text.lstrip().startswith("{") else Path(source).read_text("utf-8")
        return json.loads(raw)
    except OSError as exc:
        raise InvalidPlan([FieldError("", f"cannot read {text}: {exc.strerror}")]) from None
    except ValueError as exc:
        raise InvalidPlan([FieldError("", f"not valid JSON: {exc}")]) from None


def load_plan(plan: Plan | Mapping[str, Any] | str | Path) -> Plan:
    """A Plan from an object, a dict, a JSON string or a JSON file path; InvalidPlan lists every bad field."""
    if isinstance(plan, Plan):
        return plan
    if isinstance(plan, (str, Path)):
        plan = read_plan_document(plan)
    try:
        return Plan.model_validate(plan)
    except ValidationError as exc:
        raise InvalidPlan(field_errors(exc)) from None


def verify(
    workload: Workload | Any, plan: Plan | Mapping[str, Any] | str | Path, *, rel_tol: float = 1e-6
) -> list[str]:
    """Every violation of the plan against the workload, recomputed from the placements alone ([] = valid).

    Plans with a non-feasible status (infeasible, no_solution) are accepted as long as they admit no job.
    """
    w = Workload.load(workload)
    p = load_plan(plan)
    if p.status not in FEASIBLE_STATUSES and not any(pl.admitted for pl in p.placements):
        return []
    ctx = _build_context(w, p, rel_tol)
    problems: list[str] = []
    for check in CHECKS:
        problems.extend(check(ctx))
    return problems
