"""The night's figures, computed from the job timelines and the event log alone."""

from __future__ import annotations

import math

from optsched.night.fairness import night_fairness, rhos, team_nights
from optsched.schema.night import (
    CriticalPath,
    DeviceUtilisation,
    JobTimeline,
    NightEvent,
    NightQueue,
    NightStatus,
    NightSummary,
    PriorityCounts,
)
from optsched.schema.workload import FAIR_OBJECTIVES, HARD_PRIORITIES, PRIORITY_WEIGHT, Priority


def summarize(
    queue: NightQueue,
    policy: str,
    jobs: tuple[JobTimeline, ...],
    events: tuple[NightEvent, ...],
    hours: float,
    decisions_at_time_limit: int = 0,
) -> NightSummary:
    finished = [(j, j.finish_hours) for j in jobs if j.finish_hours is not None]
    makespan = max((f for _, f in finished), default=0.0)
    horizon = max(hours, makespan)
    never = tuple(j.job for j in jobs if j.finish_hours is None)
    hard = [
        j
        for j in jobs
        if Priority(j.priority) in HARD_PRIORITIES and (j.deadline_hours is not None or j.finish_hours is None)
    ]
    hard_missed = tuple(j.job for j in hard if j.deadline_met is False or j.finish_hours is None)
    soft_missed = tuple(j.job for j in jobs if Priority(j.priority) not in HARD_PRIORITIES and j.deadline_met is False)
    by_night = tuple(j.job for j, f in finished if f <= hours + 1e-9)
    weights = {j.job: PRIORITY_WEIGHT[Priority(j.priority)] * j.weight for j in jobs}
    total_weight = sum(weights[j.job] for j, _ in finished)
    wmct = sum(weights[j.job] * f for j, f in finished) / total_weight if total_weight else None
    peak = max((e.power_w for e in events), default=0.0)
    shares = [e.power_w / e.budget_w for e in events if e.budget_w]
    return NightSummary(
        policy=policy,
        status=NightStatus.met if not hard_missed and not never else NightStatus.missed,
        jobs=len(jobs),
        makespan_hours=makespan,
        horizon_hours=horizon,
        finished_by_end_of_night=len(by_night),
        finished_jobs_by_end_of_night=by_night,
        never_ran=never,
        stopped=tuple(j.job for j in jobs if j.finish_hours is None and j.segments),
        hard_deadlines_met=sum(1 for j in jobs if Priority(j.priority) in HARD_PRIORITIES and j.deadline_met is True),
        hard_deadlines_missed=hard_missed,
        soft_deadlines_missed=soft_missed,
        weighted_mean_completion_hours=wmct,
        by_priority={p.value: _priority_counts([j for j in jobs if j.priority == p.value]) for p in Priority},
        critical_path=critical_path(jobs),
        energy_kwh=energy_kwh(events, horizon),
        work_finished_by_end_of_night_hours=sum(j.work_hours for j, f in finished if f <= hours + 1e-9),
        lost_work_hours=sum(j.lost_work_hours for j in jobs),
        restarts=sum(j.restarts for j in jobs),
        peak_power_w=peak,
        peak_budget_share=max(shares) if shares else None,
        peak_power_by_domain={
            d: max(e.power_by_domain.get(d, 0.0) for e in events) for d in (events[0].power_by_domain if events else {})
        },
        device_utilisation=_utilisation(queue, jobs, horizon),
        events=len(events),
        decisions_at_time_limit=decisions_at_time_limit,
        max_rho=max(rhos(queue, jobs).values(), default=None),
        teams=team_nights(queue, jobs, horizon),
        fairness=night_fairness(queue, jobs, hours) if queue.objective in FAIR_OBJECTIVES else None,
    )


def energy_kwh(events: tuple[NightEvent, ...], horizon: float) -> float:
    """sum over events of power_w x (time to the next event, or to the horizon) / 1000."""
    total = 0.0
    for e, nxt in zip(events, (*(x.at_hours for x in events[1:]), horizon), strict=True):
        total += e.power_w * max(0.0, min(nxt, horizon) - e.at_hours)
    return total / 1000.0


def critical_path(jobs: tuple[JobTimeline, ...]) -> CriticalPath:
    """The dependency chain ending last when each job starts at max(release, predecessors' ends) and runs as planned."""
    by_id = {j.job: j for j in jobs}
    end: dict[str, float] = {}
    via: dict[str, str | None] = {}
    for job_id in topological_order(jobs):
        j = by_id[job_id]
        if j.finish_hours is None or j.start_hours is None:
            continue
        start: float = j.release_hours
        pred: str | None = None
        for p in j.after:
            if p in end and end[p] > start:
                start, pred = end[p], p
        end[job_id] = start + (j.finish_hours - j.start_hours)
        via[job_id] = pred
    if not end:
        return CriticalPath(jobs=(), hours=0.0)
    order = [j.job for j in jobs]
    last = max(end, key=lambda k: (end[k], -order.index(k)))
    path = [last]
    while (pred := via[path[-1]]) is not None:
        path.append(pred)
    return CriticalPath(jobs=tuple(reversed(path)), hours=end[last])


def topological_order(jobs) -> list[str]:
    """Job ids with every job after the ones it depends on (queue order among equals); jobs must form a DAG."""
    pending = {j.job: set(j.after) for j in jobs}
    order: list[str] = []
    while pending:
        free = [k for k, deps in pending.items() if not deps]
        if not free:
            raise ValueError(f"dependency cycle among {sorted(pending)}")
        for k in free:
            del pending[k]
            order.append(k)
        for deps in pending.values():
            deps.difference_update(free)
    return order


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in (0, 100]) of a non-empty list."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100.0 * len(ordered)) - 1)]


def _priority_counts(jobs: list[JobTimeline]) -> PriorityCounts:
    waits = [j.wait_hours for j in jobs if j.wait_hours is not None]
    return PriorityCounts(
        jobs=len(jobs),
        with_deadline=sum(1 for j in jobs if j.deadline_hours is not None),
        deadlines_met=sum(1 for j in jobs if j.deadline_met is True),
        deadlines_missed=sum(1 for j in jobs if j.deadline_met is False),
        finished=sum(1 for j in jobs if j.finish_hours is not None),
        never_ran=sum(1 for j in jobs if j.finish_hours is None),
        mean_wait_hours=sum(waits) / len(waits) if waits else None,
        p95_wait_hours=percentile(waits, 95) if waits else None,
    )


def _utilisation(queue: NightQueue, jobs: tuple[JobTimeline, ...], horizon: float) -> tuple[DeviceUtilisation, ...]:
    busy = {g.id: 0.0 for g in queue.devices}
    for j in jobs:
        for s in j.segments:
            for a in s.allocations:
                busy[a.device] += len(a.devices) * (min(s.to_hours, horizon) - s.from_hours)
    return tuple(
        DeviceUtilisation(
            device=g.id,
            count=g.count,
            busy_device_hours=busy[g.id],
            utilisation=busy[g.id] / (g.count * horizon) if horizon > 0 else 0.0,
        )
        for g in queue.devices
    )
