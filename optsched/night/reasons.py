"""Plain-language reasons why a job missed its deadline or never ran, read off the finished timeline."""

from __future__ import annotations

import math
from dataclasses import dataclass

from optsched.night.fleet import Fleet
from optsched.schema.tolerances import TIME_TOL_HOURS

Held = tuple[tuple[int, int, tuple[int, ...]], ...]  # (group, level, device indices)


@dataclass(frozen=True)
class JobRecord:
    start: float | None
    finish: float | None
    pieces: tuple[tuple[float, float, bool, Held], ...]  # (from, to, restart, held)


def never_ran_reason(fleet: Fleet, i: int, records: list[JobRecord]) -> str:
    job = fleet.jobs[i]
    lost = [fleet.jobs[p].id for p in fleet.predecessors[i] if records[p].finish is None]
    if lost:
        return f"never ran: predecessor(s) {lost} never ran"
    groups = fleet.eligible_groups[i]
    if not groups:
        return "never ran: no device group is eligible (check memory_gb and allowed_models)"
    eligible = sum(fleet.queue.devices[g].count for g in groups)
    if eligible < job.min_devices:
        return f"never ran: needs at least {job.min_devices} devices but only {eligible} are eligible"
    blocked = _power_blocks(fleet, i, records)
    if blocked is not None:
        return (
            f"never ran: alone on its {job.min_devices} least-drawing eligible devices at their lowest caps, {blocked}"
        )
    return "never ran: no decision found room for it (devices, power or its deadline) before the queue ran out"


def stopped_reason(fleet: Fleet, i: int, records: list[JobRecord], remaining: float) -> str:
    """Why job i, which ran until a device failure stopped it, never finished (`remaining`: its work left)."""
    job = fleet.jobs[i]
    stop = records[i].pieces[-1][1]
    why = _power_blocks(fleet, i, records, since=stop, work=remaining, restart=fleet.restart_hours(i))
    if why is None:
        why = "no later decision found room for it (devices, power or its deadline)"
    elif why.startswith("the fleet"):
        why = f"alone at its lowest caps {why}"
    return (
        f"stopped: a device failure at {stop:.4g} h stopped it with {remaining:.4g} of its {job.work_hours:g} "
        f"reference hours left, and it did not run again: {why}"
    )


def miss_reason(fleet: Fleet, i: int, records: list[JobRecord]) -> str:
    """Why job i, which has a deadline and ran, missed it."""
    job = fleet.jobs[i]
    rec = records[i]
    deadline, start = job.deadline_hours, rec.start
    if deadline is None or start is None:
        raise ValueError(f"job {job.id!r} has no deadline or never started, so it missed no deadline")
    best_s = fleet.best_speedup(i)
    best = job.work_hours / best_s
    ready, by = _ready(fleet, i, records)
    if ready + best > deadline * (1 + 1e-9):
        if by is not None:
            pred = fleet.jobs[by]
            own, finish = pred.deadline_hours, records[by].finish
            late = (
                ""
                if own is None or finish is None or finish <= own * (1 + 1e-6)
                else f", missing its own deadline of {own:g} h"
            )
            return (
                f"predecessor {pred.id!r} finished at {ready:.4g} h{late}; even the fastest run ({best:.4g} h on its "
                f"best devices at full power) could not end by the deadline {deadline:g} h"
            )
        return (
            f"released at {ready:.4g} h; even the fastest run ({best:.4g} h on its best devices at full power) "
            f"ends after the deadline {deadline:g} h"
        )
    if start + best > deadline * (1 + 1e-9):
        return (
            f"ready at {ready:.4g} h but started only at {start:.4g} h: "
            f"{_why_waiting(fleet, i, records, ready, start)}; from then even the fastest run ({best:.4g} h) ends "
            f"after the deadline {deadline:g} h"
        )
    restarts = sum(1 for p in rec.pieces if p[2])
    if restarts:
        return (
            f"started at {start:.4g} h but was preempted and paid {restarts} restart(s); finished at {rec.finish:.4g} h"
        )
    capped = [p for p in rec.pieces if any(lv != fleet.fastest_level(i, g) for g, lv, _ in p[3])]
    if capped:
        at = capped[0][0]
        budget = fleet.budget_at(at)
        within = f" (global budget {budget:,.0f} W in force at {at:.4g} h)" if budget is not None else ""
        return (
            f"started at {rec.start:.4g} h but ran below full speed: its caps were lowered to fit the power "
            f"budgets{within}; finished at {rec.finish:.4g} h"
        )
    devices = max(sum(len(ix) for _, _, ix in p[3]) for p in rec.pieces)
    return (
        f"started at {rec.start:.4g} h on {devices} device(s), fewer or slower than its best "
        f"({fleet.max_devices(i)} at full speed) because the others were busy; finished at {rec.finish:.4g} h"
    )


def _ready(fleet: Fleet, i: int, records: list[JobRecord]) -> tuple[float, int | None]:
    """When job i could first start (release and every predecessor finished), and the predecessor that set it."""
    ready, by = fleet.jobs[i].release_hours, None
    for p in fleet.predecessors[i]:
        finish = records[p].finish
        if finish is not None and finish > ready + TIME_TOL_HOURS:
            ready, by = finish, p
    return ready, by


def _why_waiting(fleet: Fleet, i: int, records: list[JobRecord], ready: float, start: float) -> str:
    """Devices busy (held by whom) and/or no power headroom, between ready and start."""
    instants = sorted(
        {ready} | {x for k, rec in enumerate(records) if k != i for p in rec.pieces for x in p[:2] if ready < x < start}
    )
    for at in instants:
        free, holders = _free_eligible(fleet, i, records, at)
        if free >= fleet.jobs[i].min_devices:
            break
    else:
        free, holders = _free_eligible(fleet, i, records, ready)
        names = ", ".join(repr(h) for h in sorted(holders))
        return f"only {free} of its eligible devices were free (the others held by {names})"
    busy = ""
    if at > ready:
        _, holders = _free_eligible(fleet, i, records, ready)
        busy = (
            f"its eligible devices were held by {', '.join(repr(h) for h in sorted(holders))} until {at:.4g} h, then "
        )
    return f"{busy}{free} eligible devices were free but the power budgets in force until it would end left no room"


def _free_eligible(fleet: Fleet, i: int, records: list[JobRecord], at: float) -> tuple[int, set[str]]:
    """Free devices of job i's eligible groups just after `at`, and the jobs holding the others."""
    free, holders = 0, set()
    for g in fleet.eligible_groups[i]:
        held: dict[int, int] = {}
        for other, rec in enumerate(records):
            if other == i:
                continue
            for start, end, _, pieces in rec.pieces:
                if start <= at + TIME_TOL_HOURS < end:
                    for hg, _, indices in pieces:
                        if hg == g:
                            held.update({k: other for k in indices})
        free += fleet.queue.devices[g].count - len(held)
        holders |= {fleet.jobs[h].id for h in held.values()}
    return free, holders


def _power_blocks(
    fleet: Fleet,
    i: int,
    records: list[JobRecord],
    since: float | None = None,
    work: float | None = None,
    restart: float = 0.0,
) -> str | None:
    """Why job i cannot run even alone at its lowest caps (a budget it would exceed), from `since` (default: when
    it is ready) with `work` reference hours (default: all of it) left and `restart` hours to pay first, or None
    if it can."""
    job = fleet.jobs[i]
    groups = fleet.queue.devices
    headroom = {d: b - fleet.idle_of_domain(d) for d, b in fleet.queue.power.domains.items()}
    extras = sorted(
        (fleet.lowest_cap_w(g) - groups[g].idle_w, g) for g in fleet.eligible_groups[i] for _ in range(groups[g].count)
    )
    chosen: list[float] = []
    for extra, g in extras:
        domain = groups[g].domain
        if len(chosen) < job.min_devices and (domain not in headroom or headroom[domain] >= extra - 1e-9):
            chosen.append(extra)
            if domain in headroom:
                headroom[domain] -= extra
    if len(chosen) < job.min_devices:
        return "the domain budgets cannot hold its devices"
    draw = fleet.idle_w + sum(chosen)
    ready = _ready(fleet, i, records)[0] if since is None else since
    cuts = [ready, *(b for b in fleet.boundaries if b > ready)]
    periods = [(a, b, fleet.budget_at(a)) for a, b in zip(cuts, [*cuts[1:], math.inf], strict=True)]
    fits = [(a, b) for a, b, budget in periods if budget is None or draw <= budget + 1e-9]
    if not fits:
        most = max(budget for _, _, budget in periods if budget is not None)  # a period without one fits
        return (
            f"the fleet draws {draw:,.0f} W, above every global budget in force from {ready:.4g} h (at "
            f"most {most:,.0f} W)"
        )
    longest = max(b - a for a, b in fits)
    shortest_run = restart + (job.work_hours if work is None else work) / fleet.best_speedup(i)
    if longest < shortest_run:
        return (
            f"the fleet draws {draw:,.0f} W, which the global budget allows only in stretches of at most "
            f"{longest:.4g} h, shorter than its fastest run ({shortest_run:.4g} h)"
        )
    if not math.isinf(fits[-1][1]):
        spans = ", ".join(f"{a:.4g}-{b:.4g} h" for a, b in fits)
        return (
            f"the fleet draws {draw:,.0f} W, which the global budget allows only in {spans}; "
            f"other jobs held the devices or the power there"
        )
    return None
