"""The planner's dispatch policy: completion-aware starts with reservations and backfilling, priority protection
and elastic growth, one event at a time through the shared engine.

At each event the ready jobs are taken in order (urgent hard jobs first: those whose effective deadline is at
risk and critical/high jobs without a deadline that have waited longer than their bound; then by priority,
effective deadline and weighted shortest remaining time, or by a variant order). For each job:

* *now*: its fastest allocation on the free devices (as many of the fastest eligible ones as it may use, at the
  highest caps whose draw fits every budget in force until it would end: the domain budgets and the global
  budget at every window start before its end, with the running jobs' draws);
* *wait*: its best finish if it waited for the devices the running jobs will free (their expected ends);
* it starts now if that does not finish it later than waiting (an urgent job always starts, unless the policy's
  `urgent_waits` lets it wait for a sooner finish), unless the devices belong to an earlier job's reservation;
  otherwise it reserves the devices it waits for, and later jobs may start in front of it only if they end
  before the reservation or use devices it leaves over (EASY's rule, with up to `reservations` reservations).

Effective deadlines are propagated backwards along `after` chains (a predecessor must end in time for its
successors to run at their best speed). After the starts, elastic running jobs may grow onto (or move to)
free devices no reservation needs, when the finish they gain exceeds the restart they pay.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

from optsched.night.engine import Decision, View
from optsched.night.fleet import Fleet, Use, Uses, most_that_fit
from optsched.schema.tolerances import TIME_TOL_HOURS
from optsched.schema.workload import PRIORITY_WEIGHT

# A job starts now unless waiting finishes it more than this (hours, and this share of its remaining run) earlier.
WAIT_GAIN_HOURS = 0.05
WAIT_GAIN_SHARE = 0.05
# Instants (running jobs' ends) looked at when estimating what waiting gives.
WAIT_HORIZON_EVENTS = 12
# A hard job is urgent once its slack (effective deadline - now - fastest run) is below this many hours.
URGENT_SLACK_HOURS = 0.5
# A soft-deadline job jumps Smith's rule (order hybrid-soft) once its slack is below this many hours; in order
# hybrid-soft-tight below TIGHT_SOFT_SLACK_HOURS. large-201 of bench/night_queues.py (500 jobs): at 1 h, 6 hard and
# 8 soft misses; at 0.5 h, 4 hard (as many as the best candidate) and 13 soft where that candidate missed 24.
SOFT_SLACK_HOURS = 1.0
TIGHT_SOFT_SLACK_HOURS = 0.5
# An elastic job grows or moves only if it gains at least its restart plus this share of its remaining run.
GROW_GAIN_SHARE = 0.10


SIZINGS = ("most", "efficient", "share")


@dataclass(frozen=True)
class _Option:
    uses: Uses
    end: float


class DispatchPolicy:
    """Completion-aware list dispatch with reservations, backfilling, priority protection and elastic growth."""

    def __init__(
        self,
        name: str = "dispatch",
        *,
        order: str = "priority",
        reservations: int = 1,
        grow: bool = True,
        sizing: str = "most",
        completion_aware: bool = True,
        rank: tuple[int, ...] | None = None,
        horizon: float | None = None,
        urgent_waits: bool = False,
    ):
        if order not in ORDERS and not (order == "ranked" and rank is not None):
            raise ValueError(f"unknown order {order!r}; choose one of {sorted(ORDERS)} (or 'ranked' with a rank)")
        if sizing not in SIZINGS:
            raise ValueError(f"unknown sizing {sizing!r}; choose one of {SIZINGS}")
        self.name = name
        self.order = order
        self.reservations = reservations
        self.grow = grow
        # most: as many devices as it may use; efficient: at most efficient_devices(); share: at most share_devices()
        self.sizing = sizing
        self.completion_aware = completion_aware  # else a job starts whenever it can (EASY's rule)
        self.rank = rank  # order "ranked": job j's place in a fixed order (the local search's, optsched.night.improve)
        self.horizon = horizon  # hours: the night's end, which sizing "share" fills towards (None: equal shares)
        # An urgent job waits for devices the running jobs free when that ends it sooner (no WAIT_GAIN margin), else
        # it starts at once: tight-1 of bench/night_queues_third.py, q85 started on the one device its domain budget
        # left and missed its deadline by hours.
        self.urgent_waits = urgent_waits

    def static_order(self, fleet: Fleet) -> tuple[int, ...] | None:
        """The jobs in the order this policy takes them when its order does not change over the night (a waiting
        job's key depends on the queue alone): the order whose `ranked` replay, at this sizing and start rule, is
        this policy's night unless a failure cuts a job short. None for an order that changes with time."""
        if self.order not in STATIC_ORDERS:
            return None
        jobs = range(len(fleet.jobs))
        work = {j: fleet.jobs[j].work_hours for j in jobs}
        start = View(t=0.0, fleet=fleet, running=(), ready=tuple(jobs), remaining=work, needs_restart=frozenset(),
                     free=(), next_event=math.inf, preempt=False)
        return tuple(sorted(jobs, key=lambda j: ORDERS[self.order](start, j)))

    def _key(self, view: View, j: int) -> tuple:
        if self.rank is not None:
            return (self.rank[j], j)
        return ORDERS[self.order](view, j)

    def decide(self, view: View) -> Decision:
        fleet = view.fleet
        uses: dict[int, Uses] = {r.job: r.uses for r in view.running}
        ends = {r.job: view.finish_at(r) for r in view.running}
        free = list(view.free)
        held: list[tuple[float, list[int], Uses]] = []  # reservations: (instant, devices left over then, its devices)
        stalled = {r.job: r for r in view.stalled}
        urgent = {j for j in view.ready if is_urgent(view, j)}
        shares = fair_shares(view, self.horizon) if self.sizing == "share" else {}
        # The running jobs' draw changes only when a job is taken: summed once per take, not once per job tried.
        draws = Draws(view, uses, ends, stalled=stalled)
        for j in sorted(view.ready, key=lambda j: (j not in urgent, *self._key(view, j))):
            if not any(free) and len(held) >= self.reservations:
                break  # nothing is free and no reservation is left to give: no later job can change anything
            most = efficient_devices(fleet, j) if self.sizing == "efficient" else shares.get(j)
            now = best_now(view, j, free, draws, most=most)
            if now is None and len(held) >= self.reservations:
                continue  # it cannot start and there is no reservation left to give it
            if j in urgent:
                patient = self.urgent_waits
                gain = 0.0
            else:
                patient = self.completion_aware or now is None
                gain = wait_gain(view, now.end) if now else 0.0
            wait = wait_option(view, j, free, uses, ends, held, most=most) if patient else None
            if now is not None and (wait is None or now.end <= wait.end + gain):
                if _allowed(now, held):
                    _take(j, now, uses, ends, free, held)
                    draws = Draws(view, uses, ends, stalled=stalled)
                    continue
            if wait is not None and len(held) < self.reservations:
                at = _instant(wait, view, j)
                spare = free_over(free, uses, ends, [at], held)[0]
                for u in wait.uses:
                    spare[u.group] -= u.count
                held.append((at, spare, wait.uses))
        if self.grow:
            grow_elastic(view, uses, ends, free, held)
        recap_to_fit(view, uses)
        return Decision(uses, solve=self.name)


def wait_option(
    view: View,
    j: int,
    free,
    uses,
    ends,
    held=(),
    *,
    remaining: float | None = None,
    restart: float | None = None,
    most: int | None = None,
) -> _Option | None:
    """The earliest finish job j could get by waiting for devices the running jobs free (top caps, no power);
    `remaining` and `restart` default to the ready job's."""
    fleet = view.fleet
    instants = sorted({e for e in ends.values() if view.t + TIME_TOL_HOURS < e < math.inf})[:WAIT_HORIZON_EVENTS]
    best: _Option | None = None
    restart = view.restart_of(j) if restart is None else restart
    remaining = view.remaining[j] if remaining is None else remaining
    groups, seen = fleet.groups_by_speed[j], None
    for at, then in zip(instants, free_over(free, uses, ends, instants, held), strict=True):
        mine = [then[g] for g in groups]
        if mine == seen:
            continue  # the same devices later: the same option, ending later
        seen = mine
        option = _fastest(fleet, j, then, top=True, k=most)
        if option is None:
            continue
        end = at + restart + remaining / fleet.speedup(j, option)
        if best is None or end < best.end - TIME_TOL_HOURS:
            best = _Option(option, end)
    return best


def now_end(view: View, j: int, free, remaining: float, restart: float) -> float:
    """When job j would end on its fastest free devices at top caps (power aside); inf if it cannot start."""
    option = _fastest(view.fleet, j, free, top=True)
    if option is None:
        return math.inf
    return view.t + restart + remaining / view.fleet.speedup(j, option)


def wait_gain(view: View, end: float) -> float:
    """Hours by which waiting must beat starting now before a job waits."""
    return WAIT_GAIN_HOURS + WAIT_GAIN_SHARE * max(0.0, end - view.t)


def priority_key(view: View, j: int) -> tuple:
    return (not is_urgent(view, j), *_priority_key(view, j))


def _instant(wait: _Option, view: View, j: int) -> float:
    s = view.fleet.speedup(j, wait.uses)
    return wait.end - view.restart_of(j) - view.remaining[j] / s


def free_over(free, uses, ends, instants: list[float], held) -> list[list[int]]:
    """Devices per group free at each of the (sorted) instants: free now plus those of jobs ending by then, less
    the reservations starting by then; one sweep over the running jobs' ends and the reservations."""
    changes = sorted(
        [(ends[i], 1, us) for i, us in uses.items()] + [(when, -1, reserved) for when, _, reserved in held],
        key=lambda c: c[0],
    )
    then, out, k = list(free), [], 0
    for at in instants:
        while k < len(changes) and changes[k][0] <= at + TIME_TOL_HOURS:
            _, sign, us = changes[k]
            for u in us:
                then[u.group] += sign * u.count
            k += 1
        out.append([max(0, n) for n in then])
    return out


def _allowed(option: _Option, held) -> bool:
    """A start may not delay a reservation: it ends before it, or uses only devices the reservation leaves over."""
    return all(
        option.end <= at + TIME_TOL_HOURS or all(u.count <= spare[u.group] for u in option.uses)
        for at, spare, _ in held
    )


def _take(j: int, option: _Option, uses, ends, free, held) -> None:
    uses[j], ends[j] = option.uses, option.end
    for u in option.uses:
        free[u.group] -= u.count
    for at, spare, _ in held:
        if option.end > at + TIME_TOL_HOURS:
            for u in option.uses:
                spare[u.group] -= u.count


def _fastest(fleet: Fleet, j: int, free, *, top: bool, k: int | None = None, rank: int = 0) -> Uses | None:
    """Job j's k (default: as many as it may use) fastest devices among `free`, each group at its `rank`-th
    highest cap (0: the highest); None if fewer than min_devices are free."""
    job = fleet.queue.jobs[j]
    groups = fleet.groups_by_speed[j]
    most = sum(free[g] for g in groups)
    if job.max_devices is not None:
        most = min(most, job.max_devices)
    if k is not None:
        most = min(most, k)
    if most < job.min_devices or most <= 0:
        return None
    out, left = [], most
    for g in groups:
        n = min(free[g], left)
        if n > 0:
            out.append(Use(g, fleet.fastest_level(j, g) if top else fleet.level_by_rank(g, rank), n))
            left -= n
            if not left:
                break
    # One Use per group: by group is Use's own order, without its field-by-field comparisons.
    return tuple(sorted(out, key=_group))


def _group(use: Use) -> int:
    return use.group


def best_now(view: View, j: int, free, draws: Draws, most: int | None = None) -> _Option | None:
    """Job j's earliest finish on the free devices (at most `most`) at caps whose draw, on top of the running
    jobs' (`draws`), fits every budget until it ends."""
    fleet = view.fleet
    restart = view.restart_of(j)
    widest = _fastest(fleet, j, free, top=True, k=most)
    if widest is None:
        return None
    n = sum(u.count for u in widest)
    ranks = max(len(fleet.queue.devices[u.group].power_levels) for u in widest)
    # No more devices than fit the budgets now at the lowest caps: a start on more fits at no cap (each device of k
    # is one of k + 1's, at the same level), and skipping them leaves the search as it was, only shorter.
    lowest = ranks - 1
    fewest = fleet.jobs[j].min_devices

    def fits_now(k: int) -> bool:
        option = _fastest(fleet, j, free, top=lowest == 0, k=k, rank=lowest)
        return option is not None and draws.fit(option, view.t)

    best: _Option | None = None
    for k in range(most_that_fit(fewest, n, fits_now), fewest - 1, -1):
        for rank in range(ranks):  # at k devices, each lower cap is slower: the first that fits is k's best
            option = _fastest(fleet, j, free, top=rank == 0, k=k, rank=rank)
            if option is None:
                return best
            end = view.t + restart + view.remaining[j] / fleet.speedup(j, option)
            if best is not None and end >= best.end - TIME_TOL_HOURS:
                if rank == 0:
                    return best  # fewer devices cannot end sooner either
                break
            if draws.fit(option, end):
                best = _Option(option, end)
                if rank == 0:
                    return best
                break
    return best


def fits(view: View, candidate: Uses, end: float, uses, ends, without: int | None = None, stalled=None) -> bool:
    """The candidate's draw, with the running jobs' (but `without`'s) and that of jobs resuming after a repair
    (`stalled`, from their resumption), fits the domain budgets now and when a stalled job resumes, and the
    global budget in force now, at every window start and at every resumption before it ends."""
    return Draws(view, uses, ends, without=without, stalled=stalled).fit(candidate, end)


class Draws:
    """The draw of the running jobs (but `without`) and of the stalled ones from their resumption, at now and at
    every later window boundary and resumption: summed once for all the allocations `fit` tries (best_now tries up
    to devices x caps of them, and summing every running job's draw at each try was half a 120-job night's time)."""

    def __init__(self, view: View, uses, ends, *, without: int | None = None, stalled=None) -> None:
        fleet = self.fleet = view.fleet
        self.t = view.t
        others = {i: u for i, u in uses.items() if i != without}
        stalled = stalled or {}
        later = {b for b in fleet.boundaries if view.t + TIME_TOL_HOURS < b}
        later |= {r.since for r in stalled.values() if view.t < r.since}
        # (instant, fleet draw, draw per domain, global budget then)
        self.instants: list[tuple[float, float, dict[str, float], float | None]] = []
        for at in [view.t, *sorted(later)]:
            still = [u for i, u in others.items() if at == view.t or ends[i] > at + TIME_TOL_HOURS]
            still += [r.uses for r in stalled.values() if r.since <= at + TIME_TOL_HOURS]
            total, by_domain = fleet.power(still)
            self.instants.append((at, total, by_domain, fleet.budget_at(at)))
        self.domains = fleet.queue.power.domains

    def fit(self, candidate: Uses, end: float) -> bool:
        """The candidate's draw on top fits every domain budget and the global budget at now and at each instant
        before `end`."""
        fleet = self.fleet
        extra = fleet.extra_w(candidate)
        extra_by_domain = {d: fleet.extra_w(candidate, d) for d in self.domains}
        for at, total, by_domain, budget in self.instants:
            if at != self.t and at >= end - TIME_TOL_HOURS:
                break
            if any(by_domain.get(d, 0.0) + extra_by_domain[d] > b + 1e-9 for d, b in self.domains.items()):
                return False
            if budget is not None and total + extra > budget + 1e-9:
                return False
        return True


def grow_elastic(view: View, uses: dict[int, Uses], ends: dict[int, float], free: list[int], held) -> list[int]:
    """Elastic running jobs take free devices no reservation needs (or move to faster ones) when that ends them
    earlier by more than their restart costs plus GROW_GAIN_SHARE of their remaining run; returns the jobs grown."""
    fleet = view.fleet
    grown = []
    by_job = {r.job: r for r in view.running}
    for r in sorted(view.running, key=lambda r: (-(ends[r.job] - view.t), r.job)):
        i = r.job
        if not fleet.elastic(i) or r.restart_left > 0 or uses.get(i) != r.uses or not any(free):
            continue
        pool = list(free)
        for u in r.uses:
            pool[u.group] += u.count
        option = _fastest(fleet, i, pool, top=True)
        if option is None or _counts(option) == _counts(r.uses):
            continue
        cost = fleet.restart_hours(i)
        end = view.t + cost + by_job[i].remaining / fleet.speedup(i, option)
        if end > ends[i] - cost - GROW_GAIN_SHARE * (ends[i] - view.t):
            continue
        extra = [0] * len(free)
        for u in option:
            extra[u.group] += u.count
        for u in r.uses:
            extra[u.group] -= u.count
        candidate = _Option(option, end)
        delta = tuple(Use(g, 0, n) for g, n in enumerate(extra) if n > 0)
        stalled = {s.job: s for s in view.stalled}
        if not _allowed(_Option(delta, end), held) or not fits(
            view, option, end, uses, ends, without=i, stalled=stalled
        ):
            continue
        uses[i], ends[i] = candidate.uses, candidate.end
        for g, n in enumerate(extra):
            free[g] -= n
        grown.append(i)
    return grown


def recap_to_fit(view: View, uses: dict[int, Uses]) -> None:
    """If the draw breaks a budget in force now (a job a failure delayed runs on into a lower budget), lower caps
    one step at a time, lowest priority and most drawing first, until it fits (or nothing can go lower)."""
    fleet = view.fleet
    budget = fleet.budget_at(view.t)
    while True:
        total, by_domain = fleet.power(list(uses.values()))
        over = {d for d, b in fleet.queue.power.domains.items() if by_domain.get(d, 0.0) > b + 1e-9}
        if not over and (budget is None or total <= budget + 1e-9):
            return
        choices = [
            (PRIORITY_WEIGHT[fleet.jobs[i].priority], -fleet.extra_w(us), i, k, lv)
            for i, us in uses.items()
            for k, u in enumerate(us)
            for lv in [fleet.next_lower_cap_level(u.group, u.level)]
            if lv is not None and (not over or fleet.queue.devices[u.group].domain in over)
        ]
        if not choices:
            return
        _, _, i, k, lv = min(choices)
        us = list(uses[i])
        us[k] = Use(us[k].group, lv, us[k].count)
        uses[i] = tuple(sorted(us))


def efficient_devices(fleet: Fleet, j: int) -> int:
    """The most devices at which job j's Amdahl efficiency S(k) / k = 1 / ((1 - p) k + p) stays >= 1/2, i.e.
    k <= (2 - p) / (1 - p) (all it may use when p = 1), within min_devices..max_devices."""
    job = fleet.jobs[j]
    p = job.parallel_fraction
    k = fleet.max_devices(j) if p >= 1.0 else math.floor((2 - p) / (1 - p) + 1e-9)
    if job.max_devices is not None:
        k = min(k, job.max_devices)
    return max(job.min_devices, k)


def fair_shares(view: View, horizon: float | None) -> dict[int, int]:
    """The most devices each ready job may take under sizing "share". Before the night's end (`horizon`, hours),
    water-filling on the progress by morning: one free device at a time goes to the job (the team, under
    team_max_min) whose projected progress x_j = (work done + S_j(k) x hours left) / (work x weight) is lowest
    and still grows, running jobs counted at their devices (0: the job waits); after it, or without a horizon, an
    equal share floor(free devices / ready jobs), at least min_devices (so that some job always starts)."""
    fleet = view.fleet
    queue = fleet.queue
    ready = list(view.ready)
    free_total = sum(view.free)
    if horizon is None or view.t >= horizon:
        n = max(1, len(ready))
        return {j: max(fleet.jobs[j].min_devices, free_total // n) for j in ready}
    left = horizon - view.t
    teams = queue.objective == "team_max_min"
    shares = queue.team_shares() if teams else {}

    def progress(j: int, k: int, remaining: float, restart: float) -> float:
        job = fleet.jobs[j]
        option = _fastest(fleet, j, view.free, top=True, k=k) if k > 0 else None
        gained = fleet.speedup(j, option) * max(0.0, left - restart) if option else 0.0
        return min(1.0, (job.work_hours - remaining + gained) / job.work_hours) if job.work_hours > 0 else 1.0

    def member(j: int) -> tuple[object, float]:
        """Whose level job j's progress raises (itself, or its team), and what one unit of progress adds to it."""
        job = fleet.jobs[j]
        return (job.team_name, 1.0 / shares[job.team_name]) if teams else (j, 1.0 / job.weight)

    level: dict[object, float] = {}  # a member (job, or team name) -> its projected level
    for r in view.running:
        job = fleet.jobs[r.job]
        done = job.work_hours - r.remaining + fleet.speedup(r.job, r.uses) * max(0.0, left - r.restart_left)
        key, unit = member(r.job)
        level[key] = level.get(key, 0.0) + (min(1.0, done / job.work_hours) if job.work_hours > 0 else 1.0) * unit
    counts = dict.fromkeys(ready, 0)
    cap = {j: min(fleet.max_devices(j), sum(view.free[g] for g in fleet.eligible_groups[j])) for j in ready}
    x_now = {j: progress(j, 0, view.remaining[j], view.restart_of(j)) for j in ready}
    for j in ready:
        key, unit = member(j)
        level[key] = level.get(key, 0.0) + x_now[j] * unit

    def next_step(j: int) -> tuple[int, float] | None:
        """Job j's next step (devices, its progress then), None when it may take no more; a job's steps depend on
        its own count alone, so each is computed once per device it takes."""
        step = fleet.jobs[j].min_devices if counts[j] == 0 else 1
        if counts[j] + step > cap[j]:
            return None
        return step, progress(j, counts[j] + step, view.remaining[j], view.restart_of(j))

    steps = {j: next_step(j) for j in ready}
    pool = free_total
    while pool > 0:
        best: tuple[float, float, int] | None = None
        for j, found in steps.items():
            if found is None or found[0] > pool or found[1] - x_now[j] <= 1e-12:
                continue
            candidate = (level[member(j)[0]], -(found[1] - x_now[j]) / found[0], j)
            if best is None or candidate < best:
                best = candidate
        if best is None:
            break
        j = best[2]
        chosen = steps[j]
        assert chosen is not None  # only jobs with a next step are candidates
        step, x = chosen
        counts[j] += step
        pool -= step
        key, unit = member(j)
        level[key] += (x - x_now[j]) * unit
        x_now[j] = x
        steps[j] = next_step(j)
    if not any(counts.values()):
        # Nothing gains by morning (restarts longer than what is left of the night): equal shares, as after it.
        return fair_shares(view, None)
    return counts  # 0: the job waits, its devices go where they bring the lowest progress up


def _counts(uses: Uses) -> dict[int, int]:
    out: dict[int, int] = {}
    for u in uses:
        out[u.group] = out.get(u.group, 0) + u.count
    return out


def is_urgent(view: View, j: int, remaining: float | None = None, restart: float | None = None) -> bool:
    """A hard job whose effective deadline is at risk, or a critical/high job without one past its wait bound."""
    fleet = view.fleet
    job = fleet.jobs[j]
    if not job.is_hard:
        return False
    deadline = fleet.effective_deadline(j)
    if deadline is not None:
        best = fleet.best_speedup(j)
        left = view.remaining[j] if remaining is None else remaining
        run = left / best if best > 0 else math.inf
        return deadline - view.t - (view.restart_of(j) if restart is None else restart) - run < URGENT_SLACK_HOURS
    bound = fleet.queue.defaults.max_wait_hours.get(job.priority.value)
    since = view.ready_since.get(j, view.t)
    return bound is not None and view.t - since >= bound - TIME_TOL_HOURS


def _priority_key(view: View, j: int) -> tuple:
    """Priority class, then effective deadline, then weighted shortest remaining time."""
    fleet = view.fleet
    job = fleet.jobs[j]
    deadline = fleet.effective_deadline(j)
    return (-PRIORITY_WEIGHT[job.priority], math.inf if deadline is None else deadline, -_wspt(view, j), j)


def _deadline_key(view: View, j: int) -> tuple:
    """Effective deadline (hard before soft), then priority, then weighted shortest remaining time."""
    fleet = view.fleet
    job = fleet.jobs[j]
    deadline = fleet.effective_deadline(j)
    return (
        deadline is None,
        not job.is_hard,
        math.inf if deadline is None else deadline,
        -PRIORITY_WEIGHT[job.priority],
        -_wspt(view, j),
        j,
    )


def _edf_mixed_key(view: View, j: int) -> tuple:
    """Effective deadline whatever its kind (hard first among equal ones), then priority, then weighted shortest
    remaining time: the EDF list scheduler's order, where `deadline` runs every hard job before any soft one."""
    fleet = view.fleet
    job = fleet.jobs[j]
    deadline = fleet.effective_deadline(j)
    return (
        deadline is None,
        math.inf if deadline is None else deadline,
        not job.is_hard,
        -PRIORITY_WEIGHT[job.priority],
        -_wspt(view, j),
        j,
    )


def _wspt_key(view: View, j: int) -> tuple:
    """Weighted shortest remaining time first (priority weight x weight / fastest remaining run)."""
    return (-_wspt(view, j), j)


def _hybrid_key(view: View, j: int) -> tuple:
    """Jobs a hard deadline waits on (a hard job's own, or one a hard job after it sets along `after`) first,
    earliest such deadline first; every other job by weighted shortest remaining time (Smith's rule)."""
    deadline = view.fleet.hard_deadline(j)
    if deadline is not None:
        return (0, deadline, j)
    return (1, -_wspt(view, j), j)


def _hybrid_soft_key(view: View, j: int, slack: float = SOFT_SLACK_HOURS) -> tuple:
    """As `hybrid`, with a job whose soft deadline is still in reach but close (slack under `slack` hours)
    between the hard ones and the rest, earliest soft deadline first: Smith's rule alone passes them by."""
    deadline = view.fleet.hard_deadline(j)
    if deadline is not None:
        return (0, deadline, j)
    soft = view.fleet.effective_deadline(j)
    if soft is not None:
        best = view.fleet.best_speedup(j)
        run = view.remaining[j] / best if best > 0 else math.inf
        if 0.0 <= soft - view.t - view.restart_of(j) - run < slack:
            return (1, soft, j)
    return (2, -_wspt(view, j), j)


def _wspt(view: View, j: int) -> float:
    fleet = view.fleet
    best = fleet.best_speedup(j)
    run = view.remaining[j] / best if best > 0 else math.inf
    return fleet.jobs[j].objective_weight / max(run, 1e-9)


ORDERS: dict[str, Callable[[View, int], tuple]] = {
    "priority": _priority_key,
    "deadline": _deadline_key,
    "edf-mixed": _edf_mixed_key,
    "wspt": _wspt_key,
    "hybrid": _hybrid_key,
    "hybrid-soft": _hybrid_soft_key,
    "hybrid-soft-tight": functools.partial(_hybrid_soft_key, slack=TIGHT_SOFT_SLACK_HOURS),
}
# The orders whose keys do not change while a job waits (no slack, no time): `DispatchPolicy.static_order`.
STATIC_ORDERS = ("priority", "deadline", "edf-mixed", "wspt", "hybrid")
