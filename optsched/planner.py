"""`optsched.plan`: validate, build, solve with cut refinement, extract an exact plan."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import pyomo.environ as pyo

from optsched.amdahl import speedup, tangent_point
from optsched.data import ModelData
from optsched.diagnosis import diagnose_infeasible, precheck
from optsched.model import ExtraFunctionality, add_tangent_cut, build_model
from optsched.objectives import OBJECTIVES, TIE_BREAK_SHARE, Objective
from optsched.plan import Allocation, DeviceUse, Placement, Plan, Status
from optsched.solver import Outcome, Runner
from optsched.workload import Workload, workload_warnings

# A modelled speedup this far above the exact one gets a new tangent cut at the current point.
CUT_TOLERANCE = 1e-7
# Deadlines are met when runtime <= deadline * (1 + DEADLINE_RTOL): the solver's feasibility tolerance.
DEADLINE_RTOL = 1e-6
MAX_ROUNDS = 50

WorkloadSource = Workload | Mapping[str, Any] | str | Path


def plan(
    source: WorkloadSource,
    *,
    time_limit_s: float | None = None,
    mip_gap: float | None = None,
    threads: int | None = None,
    extra_functionality: ExtraFunctionality | None = None,
) -> Plan:
    """Plan a workload (object, dict, JSON path or JSON text). Raises InvalidWorkload; never mutates the input."""
    started = time.monotonic()
    workload = Workload.load(source)
    time_limit = workload.options.time_limit_s if time_limit_s is None else time_limit_s
    gap = workload.options.mip_gap if mip_gap is None else mip_gap
    data = ModelData(workload)
    warnings = tuple(workload_warnings(workload))

    reasons = precheck(data)
    if reasons:
        return _empty_plan(data, Status.infeasible, reasons, warnings, started, rounds=0)

    objective = OBJECTIVES[workload.objective]
    if not data.options:
        # Nothing can run anywhere and precheck found no must-run job: the empty plan is the only plan.
        empty = _Search(best={}, rounds=0, proven=True)
        empty.best_value = empty.bound = objective.value(0.0, _power(data, {}))
        return _extract(data, objective, empty, Status.optimal, warnings, started)

    m = build_model(data, extra_functionality)
    runner = Runner(started + time_limit, gap, threads)
    search = _refine(m, data, objective, runner, gap, started + time_limit)

    if search.infeasible:
        return _empty_plan(data, Status.infeasible, tuple(diagnose_infeasible(data)), warnings, started, search.rounds)
    if search.best is None:
        return _empty_plan(data, Status.no_solution, (), warnings, started, search.rounds)
    status = Status.optimal if search.proven else Status.time_limit
    return _extract(data, objective, search, status, warnings, started)


@dataclass
class _Search:
    best: dict[tuple[int, int, int], int] | None = None
    best_value: float | None = None
    bound: float | None = None
    rounds: int = 0
    infeasible: bool = False
    proven: bool = False


def _refine(m, data: ModelData, objective: Objective, runner: Runner, gap: float, wall_deadline: float) -> _Search:
    """Solve, compare modelled and exact speedups, add tangent cuts where they differ, repeat (outer approximation)."""
    search = _Search()
    warm: dict[int, float] | None = None
    maximise = objective.sense == "max"
    while search.rounds < MAX_ROUNDS:
        search.rounds += 1
        result = runner.solve(m, warm)
        if result.outcome == Outcome.infeasible:
            search.infeasible = search.best is None
            return search
        if result.outcome in (Outcome.error, Outcome.limit_without_solution):
            return search
        counts = {key: int(round(pyo.value(m.n[key]))) for key in m.n}
        exact = _exact_speedups(data, counts)
        value = objective.value(_weighted(data, exact), _power(data, counts))
        if search.best_value is None or (value > search.best_value if maximise else value < search.best_value):
            search.best, search.best_value = counts, value
        search.bound = _tighter(search.bound, _primary_bound(m, data, objective, result.bound), maximise)
        if result.outcome == Outcome.optimal and _within_gap(search, gap):
            search.proven = True
            return search
        if result.outcome != Outcome.optimal or time.monotonic() >= wall_deadline:
            return search
        if not _add_cuts(m, data, counts, exact):
            # The model is exact at its optimum: its bound stands and nothing is left to refine.
            search.proven = result.outcome == Outcome.optimal
            return search
        warm = _warm_start(m, data, counts, exact)
    return search


def _add_cuts(m, data: ModelData, counts, exact: list[float]) -> int:
    added = 0
    for j, job in enumerate(data.jobs):
        modelled = pyo.value(m.S[j])
        if modelled <= exact[j] * (1 + CUT_TOLERANCE) + CUT_TOLERANCE:
            continue
        s_host, r = _host_and_aggregate(data, j, counts)
        if 0.0 < job.parallel_fraction < 1.0 and s_host > 0:
            add_tangent_cut(m, data, j, tangent_point(job.parallel_fraction, s_host, r))
            added += 1
    return added


def _warm_start(m, data: ModelData, counts, exact: list[float]) -> dict[int, float]:
    """The last plan with its exact speedups satisfies every cut (they touch S from above), so it is a valid start."""
    warm = {id(m.n[k]): float(v) for k, v in counts.items()}
    warm.update({id(m.a[j]): float(any(counts[o.key] for o in data.options_of_job[j])) for j in m.J})
    warm.update({id(m.S[j]): exact[j] for j in m.J})
    for j in m.J:
        host = _host_option(data, j, counts)
        for k in (o.key for o in data.options_of_job[j]):
            if k in m.H:
                warm[id(m.h[k])] = float(host is not None and k == host.key)
    return warm


def _within_gap(search: _Search, gap: float) -> bool:
    # The tie-break term may widen the bound by TIE_BREAK_SHARE of the gap (see objectives.py).
    return _relative_gap(search.best_value, search.bound) <= gap * (1 + TIE_BREAK_SHARE) + 1e-12


def _relative_gap(value: float | None, bound: float | None) -> float:
    if value is None or bound is None:
        return math.inf
    return abs(bound - value) / max(abs(value), 1e-9)


def _tighter(old: float | None, new: float | None, maximise: bool) -> float | None:
    if new is None:
        return old
    if old is None:
        return new
    return min(old, new) if maximise else max(old, new)


def _primary_bound(m, data: ModelData, objective: Objective, model_bound: float | None) -> float | None:
    """The solver's bound covers objective +- tie-break term; widen it so it bounds the primary objective alone."""
    if model_bound is None or not math.isfinite(model_bound):
        return None
    if objective.sense == "max":
        return model_bound + m.tie_break_weight * data.peak_power_w
    return model_bound


def _host_option(data: ModelData, j: int, counts):
    used = [o for o in data.options_of_job[j] if counts.get(o.key, 0) > 0]
    return max(used, key=lambda o: o.speed, default=None)


def _host_and_aggregate(data: ModelData, j: int, counts) -> tuple[float, float]:
    host = _host_option(data, j, counts)
    r = sum(o.speed * counts.get(o.key, 0) for o in data.options_of_job[j])
    return (host.speed if host else 0.0), r


def _exact_speedups(data: ModelData, counts) -> list[float]:
    return [speedup(job.parallel_fraction, *_host_and_aggregate(data, j, counts)) for j, job in enumerate(data.jobs)]


def _weighted(data: ModelData, speedups: list[float]) -> float:
    return sum(job.objective_weight * s for job, s in zip(data.jobs, speedups))


def _power(data: ModelData, counts, domain: str | None = None) -> float:
    total = 0.0
    for g, group in enumerate(data.groups):
        if domain is not None and group.domain != domain:
            continue
        used = 0
        for o in data.options_of_group[g]:
            n = counts.get(o.key, 0)
            used += n
            total += n * o.cap_w
        total += (group.count - used) * group.idle_w
    return total


def _domains(data: ModelData) -> list[str]:
    return sorted({g.domain for g in data.groups if g.domain is not None} | set(data.workload.power.domains))


def _device_uses(data: ModelData, counts) -> tuple[DeviceUse, ...]:
    uses = []
    for g, group in enumerate(data.groups):
        used = sum(counts.get(o.key, 0) for o in data.options_of_group[g])
        power = sum(counts.get(o.key, 0) * o.cap_w for o in data.options_of_group[g]) + (group.count - used) * group.idle_w
        uses.append(
            DeviceUse(
                device=group.id,
                model=group.model,
                domain=group.domain,
                used=used,
                idle=group.count - used,
                power_w=power,
                idle_w=group.idle_w,
                memory_gb=group.memory_gb,
                power_levels=tuple((lv.cap_w, lv.speed) for lv in group.power_levels),
            )
        )
    return tuple(uses)


def _placements(data: ModelData, counts) -> tuple[Placement, ...]:
    out = []
    for j, job in enumerate(data.jobs):
        used = sorted(
            (o for o in data.options_of_job[j] if counts.get(o.key, 0) > 0), key=lambda o: (-o.speed, o.group, o.level)
        )
        s_host, r = _host_and_aggregate(data, j, counts)
        s = speedup(job.parallel_fraction, s_host, r)
        admitted = bool(used)
        runtime = job.work_hours / s if admitted else None
        meets = None
        if job.deadline_hours is not None:
            meets = admitted and runtime <= job.deadline_hours * (1 + DEADLINE_RTOL)
        out.append(
            Placement(
                job=job.id,
                priority=job.priority.value,
                admitted=admitted,
                speedup=s,
                runtime_hours=runtime,
                deadline_hours=job.deadline_hours,
                meets_deadline=meets,
                allocations=tuple(
                    Allocation(
                        device=data.groups[o.group].id,
                        count=counts[o.key],
                        cap_w=o.cap_w,
                        speed=o.speed,
                        work_fraction=o.speed / r,
                    )
                    for o in used
                ),
            )
        )
    return tuple(out)


def _extract(data: ModelData, objective: Objective, search: _Search, status: Status, warnings, started) -> Plan:
    counts = search.best
    exact = _exact_speedups(data, counts)
    ws = _weighted(data, exact)
    power = _power(data, counts)
    value = objective.value(ws, power)
    bound = search.bound
    if bound is not None:
        # The best plan is exact; a bound that crosses it by rounding is clamped to it.
        bound = max(bound, value) if objective.sense == "max" else min(bound, value)
    return Plan(
        workload=data.workload.name,
        objective_name=objective.name,
        status=status,
        objective=value,
        bound=bound,
        gap=_relative_gap(value, bound) if bound is not None else None,
        solve_seconds=time.monotonic() - started,
        weighted_speedup=ws,
        power_w=power,
        power_by_domain={d: _power(data, counts, d) for d in _domains(data)},
        budget_w=data.workload.power.budget_w,
        budget_by_domain=dict(data.workload.power.domains),
        placements=_placements(data, counts),
        devices=_device_uses(data, counts),
        warnings=warnings,
        rounds=search.rounds,
    )


def _empty_plan(data: ModelData, status: Status, diagnosis, warnings, started, rounds: int) -> Plan:
    """A plan with nothing placed: for infeasible workloads and solves that found no plan in time."""
    counts: dict = {}
    return Plan(
        workload=data.workload.name,
        objective_name=data.workload.objective,
        status=status,
        objective=None,
        bound=None,
        gap=None,
        solve_seconds=time.monotonic() - started,
        weighted_speedup=0.0,
        power_w=_power(data, counts),
        power_by_domain={d: _power(data, counts, d) for d in _domains(data)},
        budget_w=data.workload.power.budget_w,
        budget_by_domain=dict(data.workload.power.domains),
        placements=_placements(data, counts),
        devices=_device_uses(data, counts),
        diagnosis=tuple(diagnosis),
        warnings=warnings,
        rounds=rounds,
    )
