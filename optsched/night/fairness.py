"""Fairness over the night, measured on a finished timeline (docs/guides/fairness.md): each team's share of the
device-hours, and Themis's and Gavel's finish-time fairness rho.

rho_j = (finish_j - release_j) / T_j^equal, T_j^equal = work_j / S_j^equal: the time job j would take on an equal
1/n share of the fleet, n the jobs of the queue. The share is 1/n of the devices of every group eligible for the
job (at most max_devices of them), at their fastest level; budgets are left out, as Themis leaves out everything
but devices. Below one device the job time-shares its fastest device (S^equal = R^equal); above it Amdahl's law
applies with that device as the host. rho <= 1: the job did at least as well as under an equal split.
"""

from __future__ import annotations

from optsched.model.amdahl import speedup
from optsched.model.data import eligible
from optsched.schema.night import JobTimeline, NightQueue, TeamNight
from optsched.schema.workload import Job


def equal_share_speedup(queue: NightQueue, job: Job) -> float:
    """S_j^equal (speed units; 0 when no device is eligible)."""
    n = max(1, len(queue.jobs))
    units = [
        (g.count / n, max(lv.speed for lv in g.power_levels) * job.speed_on.get(g.model, 1.0))
        for g in queue.devices if eligible(job, g)
    ]
    devices = sum(c for c, _ in units)
    if not devices:
        return 0.0
    scale = min(1.0, job.max_devices / devices) if job.max_devices is not None else 1.0
    host = max(s for _, s in units)
    r = scale * sum(c * s for c, s in units)
    return r if r <= host else speedup(job.parallel_fraction, host, r)


def rhos(queue: NightQueue, jobs: tuple[JobTimeline, ...]) -> dict[str, float]:
    """Job id -> rho for every finished job."""
    by_id = {j.id: j for j in queue.jobs}
    out = {}
    for t in jobs:
        s = equal_share_speedup(queue, by_id[t.job])
        if t.finish_hours is not None and s > 0:
            out[t.job] = (t.finish_hours - t.release_hours) / (t.work_hours / s)
    return out


def team_nights(queue: NightQueue, jobs: tuple[JobTimeline, ...], horizon: float) -> tuple[TeamNight, ...]:
    """Per team: share, device-hours held and their share, worst rho; () when no job names a team."""
    if not any(j.team is not None for j in queue.jobs):
        return ()
    team_of = {j.id: j.team_name for j in queue.jobs}
    held = {t.job: sum(
        len(a.devices) * max(0.0, min(s.to_hours, horizon) - s.from_hours) for s in t.segments for a in s.allocations
    ) for t in jobs}
    total = sum(held.values())
    rho = rhos(queue, jobs)
    out = []
    for team, share in queue.team_shares().items():
        members = [t for t in jobs if team_of[t.job] == team]
        hours = sum(held[t.job] for t in members)
        worst = [rho[t.job] for t in members if t.job in rho]
        out.append(TeamNight(
            team=team, share=share, jobs=len(members), device_hours=hours,
            device_hours_share=hours / total if total > 0 else 0.0, worst_rho=max(worst) if worst else None,
            never_ran=sum(1 for t in members if t.finish_hours is None),
        ))
    return tuple(out)


def progress_by_morning(jobs: tuple[JobTimeline, ...], hours: float) -> dict[str, float]:
    """Job id -> the share of its work done by the end of the night (0..1; work lost to failures not counted)."""
    out = {}
    for t in jobs:
        done = sum(
            s.work_hours * max(0.0, min(1.0, (hours - s.from_hours) / (s.to_hours - s.from_hours)))
            - (s.rolled_back_hours if s.to_hours <= hours else 0.0)
            for s in t.segments if s.to_hours > s.from_hours
        )
        out[t.job] = max(0.0, min(1.0, done / t.work_hours)) if t.work_hours > 0 else 1.0
    return out


def night_fairness(queue: NightQueue, jobs: tuple[JobTimeline, ...], hours: float) -> float:
    """The queue's fairness objective over the night, on progress by morning x_j: max_min_speedup
    min_j x_j / weight_j, team_max_min min over teams of (sum of its x_j) / share (0 without jobs)."""
    x = progress_by_morning(jobs, hours)
    if queue.objective == "team_max_min":
        teams: dict[str, float] = {}
        for job in queue.jobs:
            teams[job.team_name] = teams.get(job.team_name, 0.0) + x.get(job.id, 0.0)
        shares = queue.team_shares()
        return min((v / shares[t] for t, v in teams.items()), default=0.0)
    return min((x.get(job.id, 0.0) / job.weight for job in queue.jobs), default=0.0)
