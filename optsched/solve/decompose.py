"""Large workloads: split into k sub-problems (POP-style), solve them in parallel worker processes, merge.

A part is a set of power domains (racks: each domain's groups and its budget go whole to one part; without
domains, single groups) and a set of jobs. The first plan (optsched.solve.construct) decides where a placed
job goes: to the part holding most of its devices. Unplaced jobs go to the part with the most eligible speed
per job already there. Every budget that spans parts (the fleet's, or a domain split across parts) is split:
each part keeps what the first plan draws there, and the rest is shared in proportion to the devices the first
plan left idle there. So the first plan, restricted to a part, is feasible in that part: each sub-problem
starts from it (warm start) and can only improve it, and the union of the parts' plans is feasible for the
whole workload (parts share no job, no device and no watt).

Each part is an ordinary workload solved by `solve_workload` (its own LP, LP-neighbourhood sub-MIP and MILP),
with the time left split over the waves of parts the workers run. The workers report each improved part plan;
the caller sees the merged plan improve while the parts solve.
"""

from __future__ import annotations

import logging
import math
import multiprocessing
import queue
import random
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np

from optsched.model.data import ModelData
from optsched.schema.plan import Plan
from optsched.schema.workload import Options, Power, Workload
from optsched.solve.extract import Counts, group_use
from optsched.solve.options import SolveOptions

log = logging.getLogger(__name__)

SolveFn = Callable[..., Plan]
# Share of the time left that merging, the final check and extraction keep back from the parts.
MERGE_SHARE = 0.08


@dataclass(frozen=True)
class Part:
    groups: tuple[int, ...]
    jobs: tuple[int, ...]
    workload: Workload
    warm_start: dict[str, dict[tuple[str, float], int]]


def frozen_jobs(first: Counts, part_of_group: np.ndarray) -> Counts:
    """The first plan's allocations of jobs whose devices lie in more than one part: they keep them as they are
    (the parts see those devices, and the watts they draw, as taken)."""
    parts: dict[int, set[int]] = {}
    for (j, g, _), n in first.items():
        if n > 0:
            parts.setdefault(j, set()).add(int(part_of_group[g]))
    return {key: n for key, n in first.items() if n > 0 and len(parts[key[0]]) > 1}


def part_count(data: ModelData, part_options: int) -> int:
    """k with about `part_options` options per part: options fall as k^2 (jobs and groups are both split)."""
    return max(1, min(len(data.groups), math.ceil(math.sqrt(option_count(data) / part_options))))


def option_count(data: ModelData) -> int:
    """Placement options (job, eligible group, kept level), counted without building them."""
    a = data.arrays
    if not a.eligible.size:
        return 0
    return int((a.eligible.astype(np.int64) @ np.bincount(a.level_group, minlength=len(a.count))).sum())


def split(data: ModelData, first: Counts, k: int, round_: int = 0) -> list[Part]:
    """k parts (module docstring); parts left without groups or jobs are dropped. Round 0 balances devices by
    largest unit first; later rounds shuffle the units (seeded by the round), so that jobs and watts can move
    between what were different parts."""
    groups = data.groups
    units: dict[str, list[int]] = {}
    for g, group in enumerate(groups):
        budgeted = group.domain if group.domain is not None and group.domain in data.workload.power.domains else None
        units.setdefault(budgeted if budgeted is not None else f"#{g}", []).append(g)
    if len(units) < k:
        units = {f"#{g}": [g] for g in range(len(groups))}
    # Longest-processing-time: the largest units first, each to the part with the fewest devices so far.
    devices = [0] * k
    part_of_group = np.zeros(len(groups), dtype=np.int64)
    ordered = sorted(units.values(), key=lambda gs: (-sum(groups[g].count for g in gs), gs[0]))
    if round_:
        random.Random(round_).shuffle(ordered)
    for unit in ordered:
        p = min(range(k), key=lambda q: (devices[q], q))
        devices[p] += sum(groups[g].count for g in unit)
        part_of_group[unit] = p
    frozen = frozen_jobs(first, part_of_group)
    part_of_job = _assign_jobs(data, first, part_of_group, k)
    part_of_job[sorted({j for j, _, _ in frozen})] = -2
    return [
        part for p in range(k)
        if (part := _part(data, first, frozen, part_of_group, part_of_job, p)) is not None
    ]


def _assign_jobs(data: ModelData, first: Counts, part_of_group: np.ndarray, k: int) -> np.ndarray:
    a = data.arrays
    held = np.zeros((len(data.jobs), k))
    for (j, g, _), n in first.items():
        held[j, part_of_group[g]] += n
    part_of_job = np.where(held.sum(axis=1) > 0, held.argmax(axis=1), -1).astype(np.int64)
    # Eligible speed per part for every job: what an unplaced job could get there.
    speed = np.where(a.eligible, a.factor * a.top_speed * a.count, 0.0)
    per_part = np.zeros((len(data.jobs), k))
    for p in range(k):
        per_part[:, p] = speed[:, part_of_group == p].sum(axis=1)
    load = np.bincount(part_of_job[part_of_job >= 0], minlength=k).astype(np.float64)
    for j in np.flatnonzero(part_of_job < 0).tolist():
        score = per_part[j] / (1.0 + load)
        if score.max() <= 0:
            continue
        p = int(score.argmax())
        part_of_job[j] = p
        load[p] += 1
    return part_of_job


def _part(data: ModelData, first: Counts, frozen: Counts, part_of_group, part_of_job, p: int) -> Part | None:
    taken, drawn = group_use(data, frozen)
    gs = tuple(g for g in np.flatnonzero(part_of_group == p).tolist() if data.groups[g].count > taken[g])
    js = tuple(np.flatnonzero(part_of_job == p).tolist())
    if not gs or not js:
        return None
    w = data.workload
    inside = set(gs)
    kept = {(j, g, lv): n for (j, g, lv), n in first.items() if part_of_job[j] == p and g in inside}

    def reserved(domain: str | None) -> float:
        """Watts the frozen jobs draw on part p's groups in the scope."""
        return sum(
            drawn[g] for g in np.flatnonzero(part_of_group == p).tolist()
            if domain is None or data.groups[g].domain == domain
        )

    budget_w = None
    if w.power.budget_w is not None:
        budget_w = max(0.0, _share(data, first, part_of_group, p, None, w.power.budget_w) - reserved(None))
    domains = {}
    for domain, limit in w.power.domains.items():
        if any(data.groups[g].domain == domain for g in gs):
            domains[domain] = max(0.0, _share(data, first, part_of_group, p, domain, limit) - reserved(domain))
    sub = w.model_copy(update={
        "name": f"{w.name}-part{p}",
        "devices": tuple(
            data.groups[g].model_copy(update={"count": data.groups[g].count - taken[g]}) if taken[g] else data.groups[g]
            for g in gs
        ),
        "jobs": tuple(data.jobs[j] for j in js),
        "power": Power(budget_w=budget_w, domains=domains),
    })
    warm: dict[str, dict[tuple[str, float], int]] = {}
    for (j, g, lv), n in kept.items():
        warm.setdefault(data.jobs[j].id, {})[(data.groups[g].id, data.groups[g].power_levels[lv].cap_w)] = n
    return Part(gs, js, sub, warm)


def _share(data: ModelData, first: Counts, part_of_group, p: int, domain: str | None, limit: float) -> float:
    """Part p's share of a budget: what the first plan draws there, plus the rest in proportion to the devices
    the first plan leaves idle there (valued at their top cap above idle)."""
    used, drawn = group_use(data, first)
    scope = [g for g, group in enumerate(data.groups) if domain is None or group.domain == domain]
    parts = {int(part_of_group[g]) for g in scope}
    if parts == {p}:
        return limit
    draw = {q: 0.0 for q in parts}
    room = {q: 0.0 for q in parts}
    for g in scope:
        group = data.groups[g]
        q = int(part_of_group[g])
        draw[q] += drawn[g] + (group.count - used[g]) * group.idle_w
        top = max(lv.cap_w for lv in group.power_levels)
        room[q] += (group.count - used[g]) * max(top - group.idle_w, 0.0)
    rest = max(0.0, limit - sum(draw.values()))
    total_room = sum(room.values())
    extra = rest * room[p] / total_room if total_room > 0 else rest / len(parts)
    # Rounding must never let the parts' shares add up to more than the budget.
    return max(0.0, draw[p] + extra * (1 - 1e-9))


def _part_of_group(data: ModelData, parts: list[Part]) -> np.ndarray:
    """Groups of no part (all their devices frozen) get a part of their own: they hold only frozen jobs."""
    out = np.full(len(data.groups), -1, dtype=np.int64)
    for p, part in enumerate(parts):
        out[list(part.groups)] = p
    free = np.flatnonzero(out < 0)
    out[free] = len(parts) + np.arange(len(free))
    return out


def counts_of_plan(data: ModelData, part: Part, plan: Plan) -> Counts:
    """A part's plan as counts of the whole workload: (job, group, level) -> devices."""
    job_index = {data.jobs[j].id: j for j in part.jobs}
    group_index = {data.groups[g].id: g for g in part.groups}
    counts: Counts = {}
    for placement in plan.placements:
        j = job_index[placement.job]
        for alloc in placement.allocations:
            g = group_index[alloc.device]
            level = next(i for i, lv in enumerate(data.groups[g].power_levels) if lv.cap_w == alloc.cap_w)
            counts[(j, g, level)] = counts.get((j, g, level), 0) + alloc.count
    return counts


# ---- worker side -------------------------------------------------------------------------------------------

_reports: multiprocessing.Queue | None = None


def _init_worker(reports) -> None:
    global _reports
    _reports = reports


def _solve_part(
    solve: SolveFn, index: int, part: Part, time_limit_s: float, mip_gap: float, options: SolveOptions,
    threads: int | None,
) -> Plan:
    """Solve one part in a worker with `solve` (the planner's solve_workload) and `options` (hooks are set here);
    improved plans go to the report queue as they come."""

    def report(plan: Plan) -> None:
        if _reports is not None:
            _reports.put((index, plan))

    sub = part.workload.model_copy(update={"options": Options(time_limit_s=time_limit_s, mip_gap=mip_gap)})
    return solve(sub, options.replace(warm_start=part.warm_start, threads=threads, on_incumbent=report))


# ---- caller side -------------------------------------------------------------------------------------------

def solve_parts(
    parts: list[Part],
    solve: SolveFn,
    *,
    deadline: float,
    mip_gap: float,
    options: SolveOptions,
    on_part_plan: Callable[[int, Plan], None],
) -> None:
    """Solve every part by `deadline` with `options`, `options.part_workers` at a time (in this process when it
    may not have children);
    `on_part_plan(i, plan)` hears each improved plan of part i, the final ones included. Each part starts with
    the time left over the waves still to run, so time a quick part leaves goes to the parts after it."""
    workers = options.part_workers

    def time_for(remaining_parts: int) -> float:
        return (deadline - time.monotonic()) / math.ceil(remaining_parts / max(1, workers))

    # ProcessPoolExecutor's workers are not daemons (Python 3.9+): a worker is known by having a parent process.
    if workers <= 1 or multiprocessing.parent_process() is not None:
        _init_worker(None)
        for i, part in enumerate(parts):
            limit = time_for(len(parts) - i)
            if limit <= 0.05:
                break
            on_part_plan(i, _solve_part(solve, i, part, limit, mip_gap, options, None))
        return
    context = multiprocessing.get_context("fork")
    reports = context.Queue()
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_init_worker, initargs=(reports,))
    futures: dict[Future, int] = {}
    waiting = list(range(len(parts)))

    def submit() -> None:
        while waiting and len(futures) < workers:
            limit = time_for(len(waiting))
            if limit <= 0.05:
                waiting.clear()
                return
            i = waiting.pop(0)
            futures[pool.submit(_solve_part, solve, i, parts[i], limit, mip_gap, options, 1)] = i

    try:
        submit()
        while futures:
            try:
                i, plan = reports.get(timeout=0.2)
                on_part_plan(i, plan)
            except queue.Empty:
                pass
            for future in [f for f in futures if f.done()]:
                i = futures.pop(future)
                try:
                    on_part_plan(i, future.result())
                except Exception:  # a part that failed keeps the first plan's share (its warm start)
                    log.exception("part %d failed; it keeps the first plan", i)
            submit()
        while True:
            try:
                i, plan = reports.get_nowait()
            except queue.Empty:
                break
            on_part_plan(i, plan)
    finally:
        # A worker whose HiGHS ignored its interrupt may still be busy: never wait for it.
        pool.shutdown(wait=False, cancel_futures=True)


def _kept(first: Counts, part: Part) -> Counts:
    """The first plan's allocations inside `part`."""
    jobs, groups = set(part.jobs), set(part.groups)
    return {key: n for key, n in first.items() if key[0] in jobs and key[1] in groups}


def solve_decomposed(
    data: ModelData, first: Counts, solve: SolveFn, *, deadline: float, mip_gap: float, options: SolveOptions,
    consider: Callable[[Counts], None], round_: int = 0,
) -> int:
    """Split, solve the parts with `solve` (the planner's solve_workload, passed in: this module sits below the
    planner) and `options` (picklable: no hooks), and hand every improved merged plan to `consider`; returns the
    number of parts."""
    k = part_count(data, options.part_options)
    parts = split(data, first, k, round_)
    frozen = frozen_jobs(first, _part_of_group(data, parts))
    maximise = data.workload.objective != "min_power"
    # Each part's best plan so far, valued, from the first plan's share of it (no value: any plan beats it).
    best: list[tuple[float, Counts]] = [
        (-math.inf if maximise else math.inf, _kept(first, part)) for part in parts
    ]

    def on_part_plan(i: int, plan: Plan) -> None:
        if plan.objective is None or plan.status.value in ("infeasible", "no_solution"):
            return
        value = plan.objective
        if (value > best[i][0]) if maximise else (value < best[i][0]):
            best[i] = (value, counts_of_plan(data, parts[i], plan))
            merged: Counts = dict(frozen)
            for _, counts in best:
                merged.update(counts)
            consider(merged)

    # Parts overrun their limits a little (their own set-up and extraction): they stop early enough for the merge.
    parts_deadline = deadline - MERGE_SHARE * max(0.0, deadline - time.monotonic())
    solve_parts(parts, solve, deadline=parts_deadline, mip_gap=mip_gap, options=options, on_part_plan=on_part_plan)
    return len(parts)
