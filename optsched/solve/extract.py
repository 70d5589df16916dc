"""Plans assembled from integer allocations, every number recomputed exactly (shared by planner and baselines)."""

from __future__ import annotations

import math
import time

from optsched.model.amdahl import speedup
from optsched.model.data import ModelData, Option
from optsched.model.objectives import OBJECTIVES, Objective, fairness_value
from optsched.schema.plan import Allocation, DeviceUse, Placement, Plan, Status, TeamShare
from optsched.schema.tolerances import DEADLINE_RTOL

Counts = dict[tuple[int, int, int], int]  # (job, group, level) -> devices


def relative_gap(value: float | None, bound: float | None) -> float:
    if value is None or bound is None:
        return math.inf
    return abs(bound - value) / max(abs(value), 1e-9)


Used = list[tuple[Option, int]]  # one job's options with devices, in option order (group, then level)


def used_by_job(data: ModelData, counts) -> list[Used]:
    """Per job, the options it holds devices of and how many: read from `counts` alone (no option tuple needed)."""
    out: list[Used] = [[] for _ in data.jobs]
    for key in sorted(k for k, n in counts.items() if n > 0):
        out[key[0]].append((data.option(key), counts[key]))
    return out


def host_of(used: Used) -> Option | None:
    return max((o for o, _ in used), key=lambda o: o.speed, default=None)


def aggregate(used: Used) -> tuple[float, float]:
    host = host_of(used)
    return (host.speed if host else 0.0), sum(o.speed * n for o, n in used)


def exact_speedups(data: ModelData, counts, used: list[Used] | None = None) -> list[float]:
    used = used_by_job(data, counts) if used is None else used
    return [speedup(job.parallel_fraction, *aggregate(u)) for job, u in zip(data.jobs, used, strict=True)]


def weighted(data: ModelData, speedups: list[float]) -> float:
    return sum(job.objective_weight * s for job, s in zip(data.jobs, speedups, strict=True))


def has_teams(data: ModelData) -> bool:
    """Plans report per-team shares when a job names a team or the objective shares between teams."""
    return data.workload.objective == "team_max_min" or any(job.team is not None for job in data.jobs)


def team_shares(data: ModelData, counts, speedups: list[float]) -> tuple[TeamShare, ...]:
    """Per team: its share, jobs, devices held and their share of the devices used, and under a fairness
    objective its summed normalised speedup."""
    if not has_teams(data):
        return ()
    fair = OBJECTIVES[data.workload.objective].fair
    solo = data.normalisers
    held = [0] * len(data.jobs)
    for (j, _, _), n in counts.items():
        held[j] += n
    total = sum(held)
    out = []
    for team, share in data.workload.team_shares().items():
        jobs = [j for j, job in enumerate(data.jobs) if job.team_name == team]
        devices = sum(held[j] for j in jobs)
        out.append(TeamShare(
            team=team, share=share, jobs=len(jobs), devices=devices, device_share=devices / total if total else 0.0,
            normalised_speedup=sum(speedups[j] / solo[j] for j in jobs if solo[j] > 0) if fair else None,
        ))
    return tuple(out)


def group_use(data: ModelData, counts) -> tuple[list[int], list[float]]:
    """Per group: devices used and the watts they draw at their caps."""
    used, drawn = [0] * len(data.groups), [0.0] * len(data.groups)
    for (_, g, lv), n in sorted(counts.items()):
        if n:
            used[g] += n
            drawn[g] += n * data.groups[g].power_levels[lv].cap_w
    return used, drawn


def power(data: ModelData, counts, domain: str | None = None) -> float:
    used, drawn = group_use(data, counts)
    total = 0.0
    for g, group in enumerate(data.groups):
        if domain is not None and group.domain != domain:
            continue
        total += drawn[g] + (group.count - used[g]) * group.idle_w
    return total


def domains(data: ModelData) -> list[str]:
    return sorted({g.domain for g in data.groups if g.domain is not None} | set(data.workload.power.domains))


def device_uses(data: ModelData, counts) -> tuple[DeviceUse, ...]:
    uses = []
    in_use, drawn = group_use(data, counts)
    for g, group in enumerate(data.groups):
        used = in_use[g]
        power = drawn[g] + (group.count - used) * group.idle_w
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


def placements(data: ModelData, counts, by_job: list[Used] | None = None) -> tuple[Placement, ...]:
    out = []
    by_job = used_by_job(data, counts) if by_job is None else by_job
    solo = data.normalisers if OBJECTIVES[data.workload.objective].fair else None
    for j, job in enumerate(data.jobs):
        used = sorted((o for o, _ in by_job[j]), key=lambda o: (-o.speed, o.group, o.level))
        s_host, r = aggregate(by_job[j])
        s = speedup(job.parallel_fraction, s_host, r)
        admitted = bool(used)
        runtime = job.work_hours / s if admitted else None
        meets = None
        if job.deadline_hours is not None:
            meets = runtime is not None and runtime <= job.deadline_hours * (1 + DEADLINE_RTOL)
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
                team=job.team,
                solo_speedup=None if solo is None else solo[j],
            )
        )
    return tuple(out)


def extract(
    data: ModelData, objective: Objective, counts, status: Status, bound: float | None, warnings, started, rounds: int
) -> Plan:
    """The plan of integer allocations `counts`, every number recomputed exactly from them."""
    by_job = used_by_job(data, counts)
    exact = exact_speedups(data, counts, by_job)
    ws = weighted(data, exact)
    total = power(data, counts)
    value = objective.value(data, exact, total)
    if bound is not None:
        # The best plan is exact; a bound that crosses it by rounding is clamped to it.
        bound = max(bound, value) if objective.sense == "max" else min(bound, value)
    return Plan(
        workload=data.workload.name,
        objective_name=objective.name,
        status=status,
        objective=value,
        bound=bound,
        gap=relative_gap(value, bound) if bound is not None else None,
        solve_seconds=time.monotonic() - started,
        weighted_speedup=ws,
        power_w=total,
        power_by_domain={d: power(data, counts, d) for d in domains(data)},
        budget_w=data.workload.power.budget_w,
        budget_by_domain=dict(data.workload.power.domains),
        placements=placements(data, counts, by_job),
        devices=device_uses(data, counts),
        warnings=warnings,
        rounds=rounds,
        fairness=fairness_value(data, exact) if objective.fair else None,
        teams=team_shares(data, counts, exact),
    )


def empty_plan(data: ModelData, status: Status, diagnosis, warnings, started, rounds: int) -> Plan:
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
        power_w=power(data, counts),
        power_by_domain={d: power(data, counts, d) for d in domains(data)},
        budget_w=data.workload.power.budget_w,
        budget_by_domain=dict(data.workload.power.domains),
        placements=placements(data, counts),
        devices=device_uses(data, counts),
        diagnosis=tuple(diagnosis),
        warnings=warnings,
        rounds=rounds,
        teams=team_shares(data, counts, [0.0] * len(data.jobs)),
    )
