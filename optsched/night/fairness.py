"""Fairness over the night, measured on a finished timeline (docs/guides/fairness.md): each team's share of the
device-hours, and Themis's and Gavel's finish-time fairness rho.

rho_j = (finish_j - release_j) / T_j^equal, T_j^equal = work_j / S_j^equal: the time job j would take on an equal
1/n share of the fleet, n the jobs of the queue. The share is 1/n of the devices of every group eligible for the
job (at most max_devices of them), at their fastest level; budgets are left out, as Themis leaves out everything
but devices. Below one device the job time-shares its fastest device (S^equal = R^equal); above it Amdahl's law
applies with that device as the host. rho <= 1: the job did at least as well as under an equal split.
"""

from __future__ import annotations

from collections.abc import Sequence

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


# Event weights under a fairness objective (MilpPolicy's "fair" and "finish_time" weighting). Progress below
# this share of a job's (team's) work counts as this share: at the start every job has done nothing, and the
# weights then favour the jobs that gain the most progress per unit of speedup (the short ones).
PROGRESS_FLOOR = 0.01
# The exponent alpha of the alpha-fair utility whose gradient weights progress (1: proportional fairness; the
# larger, the closer to max-min: Mo and Walrand's family). 2 puts a job at half the progress at four times the weight.
ALPHA = 2.0
# The power q of the smooth maximum (sum_j rho_j^q)^(1/q) whose gradient weights speedup under finish_time.
RHO_POWER = 4.0


def progress_weights(queue: NightQueue, jobs: list[int], work_left: dict[int, float]) -> dict[int, float]:
    """Per job of `jobs`: the weight of a unit of its speedup at an event, the gradient of the alpha-fair utility
    of the fairness objective's members (1/hour; largest 1). x_i = 1 - work left / work (0..1), U = sum over
    members m of (X_m)^(1-alpha) / (1-alpha), X_m = x_j / weight_j (max_min_speedup) or sum of its team's x_i /
    share (team_max_min); dX_m/dt = S_j / (W_j target_m), so the weight is X_m^-alpha / (W_j target_m): the job
    or team furthest behind its share gains most (Gavel's and Themis's rounds give the device to whoever has
    attained least of its fair share)."""
    x = {i: 1.0 - work_left.get(i, job.work_hours) / job.work_hours if job.work_hours > 0 else 1.0
         for i, job in enumerate(queue.jobs)}
    if queue.objective == "team_max_min":
        shares = queue.team_shares()
        attained: dict[str, float] = {}
        for i, job in enumerate(queue.jobs):
            attained[job.team_name] = attained.get(job.team_name, 0.0) + x[i]
        level = {t: v / shares[t] for t, v in attained.items()}
        target = {j: shares[queue.jobs[j].team_name] for j in jobs}
        member = {j: level[queue.jobs[j].team_name] for j in jobs}
    else:
        target = {j: queue.jobs[j].weight for j in jobs}
        member = {j: x[j] / queue.jobs[j].weight for j in jobs}
    raw = {j: max(member[j], PROGRESS_FLOOR) ** -ALPHA / (queue.jobs[j].work_hours * target[j]) for j in jobs}
    return _normalised(raw)


def finish_time_weights(
    queue: NightQueue, jobs: list[int], work_left: dict[int, float], t: float, best: Sequence[float]
) -> dict[int, float]:
    """Per job of `jobs`: the weight of a unit of its speedup at time t (hours) when the night minimises the
    largest rho (largest 1): the gradient of sum_j rho_j^q, rho_j = (t - release_j + left_j / S_j) / T_j^equal,
    with rho_j the rho it reaches from now on an equal share (S_j = S_j^equal) and d rho_j / d S_j taken at
    `best[j]`, its best speedup on the fleet (taken at S^equal, the derivative undervalues what more devices give
    a job that scales well): q rho_j^(q-1) left_j S_j^equal / (best_j^2 W_j). The job heading for the worst rho
    gains most (Themis's finish-time fair auctions)."""
    raw = {}
    for j in jobs:
        job = queue.jobs[j]
        s = equal_share_speedup(queue, job)
        if s <= 0 or job.work_hours <= 0:
            raw[j] = 0.0
            continue
        left = work_left.get(j, job.work_hours)
        rho = (t - job.release_hours + left / s) / (job.work_hours / s)
        fastest = best[j] if best[j] > 0 else s
        raw[j] = max(rho, PROGRESS_FLOOR) ** (RHO_POWER - 1) * left * s / (fastest**2 * job.work_hours)
    return _normalised(raw)


def _normalised(raw: dict[int, float]) -> dict[int, float]:
    top = max(raw.values(), default=0.0)
    return {j: v / top for j, v in raw.items()} if top > 0 else dict.fromkeys(raw, 1.0)
