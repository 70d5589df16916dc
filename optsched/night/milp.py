"""The MILP candidate of `plan_night`: event-driven re-planning with the core MILP.

At each event the core planner (`optsched.plan`) solves one derived workload built from the queue:

* each running job gets its own copy of the devices it holds (a group of a model name only it may use,
  min_devices = max_devices = the devices it holds, admission forced): its caps are chosen again, so a lower
  budget is met by re-capping; after the solve, elastic jobs may grow onto or move to free devices
  (dispatch.grow_elastic) when they end sooner by more than their restart, and only if they end, even at
  their slowest caps, before the next change of the global budget;
* ready jobs compete for the free devices (devices that are down or reserved for a repair are left out, their
  idle draw taken off the budgets); a *due* critical/high job (one that would miss its deadline if it waited
  for the next event, even on all its eligible devices at full power), an eager hard job whose deadline the
  free devices can meet, and a critical/high job without a deadline past its wait bound keep their priority
  and so must start now; other jobs enter as `normal`;
* completion-aware starts: a job enters only if starting now on the free devices does not end it later than
  waiting for the devices the running jobs will free (their expected ends), and then with a runtime limit
  that ends it no later than waiting would (this replaces the slowdown guard, for jobs with and without
  deadlines; `completion_aware=False` restores the guard); a job that enters with no such limit (urgent, aged,
  already late, or with nothing to wait for) gets the guard's: no more than SLOWDOWN_CAP x its fastest run on
  the free devices;
* objective weights are priority weight x weight per hour of the job's fastest remaining run (weighted
  shortest remaining time), so the instant's speedup is valued where it ends jobs soonest;
* under a fairness objective (max_min_speedup, team_max_min) the weights follow it over the night instead: the
  gradient of a fairness utility of the service attained so far (optsched.night.fairness, the queue's
  night_fairness), and the candidates below are the heaviest jobs;
* at most CANDIDATES ready jobs (besides the forced ones) enter, the first in the dispatch order, so an
  event's model stays small however long the queue;
* a hard job's deadline keeps WINDOW_SLACK of its time as slack when a lower budget is still to come;
* `extra_functionality` adds ``night_lookahead`` rows: for each later power window, the jobs that may still
  be running then fit its budget at their lowest caps, so that re-capping can always meet every budget.

When a due job cannot start, the night goes on: it runs as early as it can and the timeline reports the
miss and its cause.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from optsched.night.dispatch import (
    grow_elastic,
    is_urgent,
    now_end,
    priority_key,
    wait_gain,
    wait_option,
)
from optsched.night.engine import Decision, Running, View
from optsched.night.fairness import finish_time_weights, progress_weights
from optsched.night.fleet import Fleet, Use, Uses
from optsched.schema.errors import FieldError, InvalidWorkload
from optsched.schema.night import NightQueue
from optsched.schema.plan import FEASIBLE_STATUSES, Plan, Status
from optsched.schema.tolerances import POWER_TOL_W, TIME_TOL_HOURS
from optsched.schema.workload import (
    FAIR_OBJECTIVES,
    PRIORITY_WEIGHT,
    Job,
    Options,
    Power,
    Priority,
    Workload,
    workload_warnings,
)
from optsched.solve.options import SolveOptions
from optsched.solve.planner import solve_workload as plan

# Deadlines handed to the core get this relative slack, well inside the 1e-6 the timeline accepts as met.
DEADLINE_SLACK = 1e-7
# Watts: rounding slack when checking the lookahead rows on a returned allocation.
# Per-event solves: decisions an event apart need no tighter gap, and a gap-proven solve is reproducible.
NIGHT_TIME_LIMIT_S = 10.0
NIGHT_MIP_GAP = 1e-2
# The least time limit an event's solve gets when the planning budget is nearly spent.
MIN_EVENT_TIME_LIMIT_S = 0.05
# A job that is not due starts only on devices giving it at least 1/SLOWDOWN_CAP of its best speed.
SLOWDOWN_CAP = 2.0
# With preempt, at most this many running jobs are tried as victims (one more per solve) for due jobs.
MAX_VICTIMS = 8
# Ready jobs offered to an event's MILP besides the forced ones: this many per free device, within these bounds,
# the first in the dispatch order (urgent, priority, effective deadline, weighted shortest remaining time).
CANDIDATES_PER_FREE_DEVICE = 2
CANDIDATES = (8, 40)
# A hard job's deadline handed to the core keeps this share of its time as slack when a lower budget is still
# to come before it (so that re-capping in a window does not turn a tight allocation into a miss).
WINDOW_SLACK = 0.1
# Hours a missed soft deadline adds to its job's completion: in the ranking of timelines (optsched.night.planner)
# and, spread over the slack left, in an event's weights (docs/guides/night.md).
SOFT_MISS_HOURS = 1.0
# The slack a soft deadline's weight is spread over is at least this (hours): a job about to miss is not worth more.
SOFT_SLACK_FLOOR_HOURS = 0.25
# MilpPolicy weightings that follow a fairness objective over the night (NightQueue.night_fairness).
FAIR_WEIGHTINGS = ("progress", "finish_time")
RANK = {Priority.critical: 0, Priority.high: 1, Priority.normal: 2, Priority.low: 3}


def validate_night(
    queue: NightQueue | Workload | Mapping[str, Any] | str | Path,
    *,
    start: datetime | str,
    hours: float,
    restart_hours: float = 0.0,
    time_limit_s: float | None = None,
    mip_gap: float | None = None,
) -> tuple[NightQueue, datetime]:
    """The queue and start time, or InvalidWorkload listing every problem with the arguments and the budgets."""
    workload = NightQueue.load(queue)
    problems: list[FieldError] = []
    begin = start if isinstance(start, datetime) else None
    if isinstance(start, str):
        try:
            begin = datetime.fromisoformat(start)
        except ValueError:
            problems.append(FieldError("start", f"{start!r} is not an ISO 8601 date-time such as 2026-12-01T22:00"))
    elif not isinstance(start, datetime):
        problems.append(FieldError("start", f"expected a datetime or ISO 8601 text, not {type(start).__name__}"))
    if not _number(hours, low=0.0, open_low=True):
        problems.append(FieldError("hours", f"the night must last a positive, finite number of hours, not {hours!r}"))
    if not _number(restart_hours, low=0.0):
        problems.append(
            FieldError("restart_hours", f"must be a non-negative, finite number of hours, not {restart_hours!r}")
        )
    if time_limit_s is not None and not _number(time_limit_s, low=0.0, high=86_400.0, open_low=True):
        problems.append(FieldError("time_limit_s", f"must be seconds in (0, 86400], not {time_limit_s!r}"))
    if mip_gap is not None and not _number(mip_gap, low=0.0, high=1.0):
        problems.append(FieldError("mip_gap", f"must be a relative gap in [0, 1], not {mip_gap!r}"))
    problems.extend(_budget_problems(workload))
    if problems or begin is None:  # begin is None only with a problem listed
        raise InvalidWorkload(problems)
    return workload, begin


def _number(x: Any, *, low: float, high: float = math.inf, open_low: bool = False) -> bool:
    """A finite int or float (not a bool) in [low, high], or (low, high] when open_low."""
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return False
    return (x > low if open_low else x >= low) and x <= high


def night_warnings(workload: NightQueue) -> tuple[str, ...]:
    warnings = workload_warnings(workload)
    if workload.objective not in ("weighted_speedup", *FAIR_OBJECTIVES):  # fairness ranks the candidates
        warnings.append(
            f"plan_night maximises weighted speedup at each event; objective {workload.objective!r} is not used"
        )
    return tuple(warnings)


def _budget_problems(w: NightQueue) -> list[FieldError]:
    """Every budget that can be in force must at least cover the idle draw, or no timeline can hold it."""
    fleet = Fleet(w)
    problems = []
    scoped = [("power.budget_w", w.power.budget_w)]
    scoped += [(f"power.windows[{i}].budget_w", x.budget_w) for i, x in enumerate(w.power.windows)]
    for path, budget in scoped:
        if budget is not None and budget < fleet.idle_w:
            problems.append(
                FieldError(path, f"{budget:,.0f} W is below the idle draw of the fleet ({fleet.idle_w:,.0f} W)")
            )
    for name, budget in sorted(w.power.domains.items()):
        idle = fleet.idle_of_domain(name)
        if budget < idle:
            problems.append(
                FieldError(
                    f"power.domains.{name}", f"{budget:,.0f} W is below the idle draw of the domain ({idle:,.0f} W)"
                )
            )
    return problems


@dataclass(frozen=True)
class _Entry:
    """One job of an event's derived workload."""

    job: int
    remaining: float  # reference work-hours
    restart: float  # hours of restart before progress
    deadline: float | None  # hours from now the core must meet, or None
    fixed: Uses | None  # a running job's allocation: it keeps these devices
    weight: float = 1.0  # objective weight (priority weight x weight, per hour of its fastest remaining run)


@dataclass(frozen=True)
class _Outcome:
    status: Status
    uses: dict[int, Uses]

    @property
    def feasible(self) -> bool:
        return self.status in FEASIBLE_STATUSES


class MilpPolicy:
    """At each event: one core MILP over running + ready jobs; fallbacks keep the night going."""

    name = "planner"

    def __init__(
        self,
        *,
        time_limit_s: float,
        mip_gap: float,
        threads: int = 1,
        slowdown_cap: float = SLOWDOWN_CAP,
        completion_aware: bool = True,
        elastic: bool = True,
        weighting: str = "wsrpt",
        name: str = "planner",
        deadline: float | None = None,
    ):
        self.name = name
        # time.monotonic() at which the planning budget ends: no event's solve runs past it (None: no budget).
        self.deadline = deadline
        self.slowdown_cap = slowdown_cap
        self.time_limit_s = time_limit_s
        self.mip_gap = mip_gap
        self.threads = threads  # one thread: HiGHS is then deterministic
        self.completion_aware = completion_aware
        self.elastic = elastic
        self.wsrpt = weighting in ("wsrpt", "wsrpt-soft")  # else the priority weights alone, as before issue 13
        self.soft = weighting == "wsrpt-soft"  # soft deadlines within reach raise their jobs' weights
        # "progress" / "finish_time": the gradient of the queue's fairness objective over the night
        # (optsched.night.fairness), instead of the priority weights.
        self.fair = weighting if weighting in FAIR_WEIGHTINGS else None
        # This event's fairness weights, built once by _decide (each job's entry asks for its own).
        self._fair_weights: dict[int, float] = {}

    def decide(self, view: View) -> Decision:
        decision = self._decide(view)
        if not self.elastic or decision.time_limited and decision.solve and decision.solve.startswith("fallback"):
            return decision
        uses = dict(decision.uses)
        grown = self._grow(view, uses)
        if not grown:
            return decision
        return Decision(uses, solve=f"{decision.solve}; grew {len(grown)}", time_limited=decision.time_limited)

    def _grow(self, view: View, uses: dict[int, Uses]) -> list[int]:
        """Elastic running jobs the MILP left as they were take free devices (dispatch.grow_elastic) if they end,
        even at their slowest caps, before the next change of the global budget (the lookahead rows hold)."""
        fleet = view.fleet
        ends = {}
        free = list(view.free)
        for j, us in uses.items():
            r = next((r for r in view.running if r.job == j), None)
            remaining = r.remaining if r is not None else view.remaining[j]
            restart = r.restart_left if r is not None else view.restart_of(j)
            s = fleet.speedup(j, us)
            ends[j] = view.t + restart + (remaining / s if s > 0 else math.inf)
            if r is None or r.uses != us:
                for u in us:
                    free[u.group] -= u.count
            if r is not None and _group_counts(r.uses) != _group_counts(us):
                for u in r.uses:
                    free[u.group] += u.count
        changes = [b for b, _ in fleet.future_budgets(view.t)]
        limit = min(changes, default=math.inf)
        kept = {r.job for r in view.running if uses.get(r.job) == r.uses}
        candidates = [r for r in view.running if r.job in kept]
        trial = replace(view, running=tuple(candidates))
        before = dict(uses)
        grown = grow_elastic(trial, uses, ends, free, [])
        for j in list(grown):
            slow = tuple(Use(u.group, fleet.slowest_level(j, u.group), u.count) for u in uses[j])
            r = next(r for r in view.running if r.job == j)
            if view.t + fleet.restart_hours(j) + r.remaining / fleet.speedup(j, slow) > limit - TIME_TOL_HOURS:
                uses[j] = before[j]
                grown.remove(j)
        return grown

    def _decide(self, view: View) -> Decision:
        if self.fair is not None:
            self._fair_weights = fair_weights(view, self.fair)
        fleet = view.fleet
        running = [self._running_entry(view, r) for r in view.running]
        waiting, due = self._waiting_entries(view)
        if not running and not waiting:
            return Decision({})
        aged = [e.job for e in waiting if fleet.jobs[e.job].deadline_hours is None and is_urgent(view, e.job)]
        hard = [e.job for e in waiting if fleet.jobs[e.job].is_hard]
        # Due hard jobs must start now; hard jobs that can meet their deadline on the free devices start now too.
        urgent = sorted(
            (j for j in due if fleet.jobs[j].is_hard and fleet.best_speedup(j, view.free) > 0),
            key=lambda j: (RANK[fleet.jobs[j].priority], fleet.jobs[j].deadline_hours, j),
        )
        eager = sorted(
            (
                e.job
                for e in waiting
                if e.job in hard
                and e.job not in due
                and e.deadline is not None
                and fleet.jobs[e.job].deadline_hours is not None
            ),
            key=lambda j: (fleet.jobs[j].deadline_hours, RANK[fleet.jobs[j].priority], j),
        )
        forced = urgent + eager + aged
        keep = set(forced) | set(due)
        room = min(max(CANDIDATES[0], CANDIDATES_PER_FREE_DEVICE * sum(view.free)), CANDIDATES[1])
        others = sorted(
            (e for e in waiting if e.job not in keep and fleet.best_speedup(e.job, view.free) > 0),
            # Under a fairness objective the jobs furthest behind their share are offered first.
            key=(lambda e: (-e.weight, e.job)) if self.fair else (lambda e: priority_key(view, e.job)),
        )
        waiting = [e for e in waiting if e.job in keep] + others[:room]
        if not waiting and not (view.preempt and due) and self._holds(view):
            # Nothing can start and the running jobs' caps still fit the budgets in force: no solve needed.
            return Decision({r.job: r.uses for r in view.running}, solve="kept (nothing to start)")
        solves: list[_Outcome] = []

        def solve(entries: list[_Entry], must: list[int]) -> _Outcome:
            solves.append(self._solve(view, entries, must))
            return solves[-1]

        notes = []
        best = solve(running + waiting, forced)
        if not best.feasible:
            best, running, waiting, kept = self._admit_greedily(running, waiting, forced, set(urgent), solve)
            notes.append(f"{len(kept)} of {len(forced)} hard jobs forced")
        else:
            kept = forced
        if view.preempt and best.feasible:
            unplaced = [j for j in due if fleet.jobs[j].is_hard and not self._in_time(view, j, best.uses.get(j))]
            if unplaced:
                preempting = self._preempt(view, running, waiting, kept, unplaced, solve, set(best.uses))
                if preempting is not None:
                    best = preempting
                    notes.append("preempted for due jobs")
        if best.feasible and not best.uses and math.isinf(view.next_event):
            # Nothing runs and nothing will happen any more: the jobs whose deadlines cannot hold start late.
            relaxed = solve(running + [replace(e, deadline=None) for e in waiting], [])
            if relaxed.feasible and relaxed.uses:
                best = relaxed
                notes.append("deadlines lifted: nothing else left to wait for")
        if not best.feasible:
            return Decision(self._fallback(view), solve=f"fallback after {len(solves)} solve(s)", time_limited=True)
        return Decision(
            best.uses,
            solve="; ".join([best.status.value, *notes]),
            time_limited=any(o.status == Status.time_limit for o in solves),
        )

    @staticmethod
    def _in_time(view: View, j: int, uses: Uses | None) -> bool:
        """Whether ready job j, started now on `uses` (None: not started), meets its deadline: a due job with too
        few or too slow devices is as much a preemption case as one with none."""
        if not uses:
            return False
        fleet = view.fleet
        deadline = fleet.jobs[j].deadline_hours
        s = fleet.speedup(j, uses)
        end = view.t + view.restart_of(j) + (view.remaining[j] / s if s > 0 else math.inf)
        return deadline is None or end <= deadline * (1 + DEADLINE_SLACK)

    @staticmethod
    def _holds(view: View) -> bool:
        """The running jobs run at their fastest levels (re-capping cannot speed them up), fit the budgets in force
        now, and no budget changes at this instant."""
        fleet = view.fleet
        if any(u.level != fleet.fastest_level(r.job, u.group) for r in view.running for u in r.uses):
            return False
        total, by_domain = fleet.power([r.uses for r in view.running])
        budget = fleet.budget_at(view.t)
        if any(abs(b - view.t) <= TIME_TOL_HOURS for b in fleet.boundaries):
            return False
        return (budget is None or total <= budget + POWER_TOL_W) and all(
            by_domain.get(d, 0.0) <= b + POWER_TOL_W for d, b in fleet.queue.power.domains.items()
        )

    # Classification -------------------------------------------------------------------------

    def _running_entry(self, view: View, r: Running) -> _Entry:
        """A running job keeps its deadline if its devices at full power can still meet it."""
        fleet = view.fleet
        job = fleet.jobs[r.job]
        deadline = None
        if job.deadline_hours is not None:
            top = tuple(Use(u.group, fleet.fastest_level(r.job, u.group), u.count) for u in r.uses)
            s = fleet.speedup(r.job, top)
            left = job.deadline_hours - view.t - r.restart_left
            if s > 0 and left > 0 and r.remaining / s <= left * (1 + DEADLINE_SLACK):
                deadline = left * (1 + DEADLINE_SLACK)
        return _Entry(r.job, r.remaining, r.restart_left, deadline, r.uses, self._weight(view, r.job, r.remaining))

    def _waiting_entries(self, view: View) -> tuple[list[_Entry], list[int]]:
        """Ready jobs that may start now, and the due ones among them."""
        entries, due = [], []
        for j in view.ready:
            restart = view.restart_of(j)
            entry, is_due = self._waiting_entry(view, j, view.remaining[j], restart, view.free)
            if entry is not None:
                entries.append(self._guarded(view, entry))
            if is_due:
                due.append(j)
        return entries, due

    def _guarded(self, view: View, entry: _Entry) -> _Entry:
        """A ready job that would enter with no runtime limit (urgent, aged, already late, or with nothing to wait
        for) gets the slowdown guard's: it starts only on devices ending it within slowdown_cap x its fastest run on
        the free devices. The event's weights make a long job's hour cheap, so without a limit the MILP starts it
        on what is left: on tight-1 of bench/night_queues_third.py the critical q34 (32 h of work, up to 16
        devices) ran on one device from 1.5 h to 34.7 h and the night's makespan was 1.4-1.7 x the best list
        scheduler's. Not where nothing will change any more (it takes what there is), nor for `milp-classic`,
        whose guard skips hard jobs with a deadline."""
        if entry.deadline is not None or not self.completion_aware or math.isinf(view.next_event):
            return entry
        on_free = view.fleet.best_speedup(entry.job, view.free)
        if on_free <= 0:
            return entry
        return replace(entry, deadline=entry.restart + self.slowdown_cap * entry.remaining / on_free)

    def _weight(self, view: View, j: int, remaining: float) -> float:
        if self.fair is not None:
            return self._fair_weights[j]
        return _weight(view, j, remaining, self.soft) if self.wsrpt else view.fleet.jobs[j].objective_weight

    def _patience(self, view: View, j: int, remaining: float, restart: float, free) -> tuple[bool, float | None]:
        """(should it wait?, runtime limit if it starts): completion-aware, a job starts now only if that does not
        end it later than waiting for the devices the running jobs will free (their expected ends), and then on
        an allocation ending no later than waiting would; without completion awareness, the slowdown guard."""
        fleet = view.fleet
        if math.isinf(view.next_event):
            return False, None  # nothing left to wait for: it takes what there is
        if not self.completion_aware:  # the slowdown guard, skipped for hard jobs with a deadline (as before)
            best = fleet.best_speedup(j)
            if best <= 0 or (fleet.jobs[j].is_hard and fleet.jobs[j].deadline_hours is not None):
                return False, None
            return False, self.slowdown_cap * remaining / best
        uses = {r.job: r.uses for r in view.running}
        ends = {r.job: view.finish_at(r) for r in view.running}
        wait = wait_option(view, j, free, uses, ends, remaining=remaining, restart=restart)
        if wait is None:
            return False, None
        now = now_end(view, j, free, remaining, restart)
        if is_urgent(view, j, remaining, restart) or math.isinf(now):
            return False, None  # urgent: it takes what there is; with nothing free for it, nothing to decide
        gain = wait_gain(view, now)
        if wait.end + gain < now:
            return True, None
        return False, wait.end + gain - view.t

    def _waiting_entry(self, view: View, j: int, remaining: float, restart: float, free) -> tuple[_Entry | None, bool]:
        """(entry or None if it should wait, due?): a due job that cannot meet its deadline enters without one."""
        fleet = view.fleet
        job = fleet.jobs[j]
        best = fleet.best_speedup(j)
        weight = self._weight(view, j, remaining)
        waits, patient = self._patience(view, j, remaining, restart, free)
        on_free = fleet.best_speedup(j, free)
        if job.deadline_hours is None:
            return (None if waits else _Entry(j, remaining, restart, patient, None, weight)), False
        left = job.deadline_hours - view.t - restart
        if best <= 0 or left <= 0 or remaining / best > left * (1 + DEADLINE_SLACK):
            return _Entry(j, remaining, restart, None, None, weight), True  # already late: run as soon as it can
        waited = view.next_event - view.t
        due = math.isinf(waited) or remaining / best > (left - waited) * (1 + DEADLINE_SLACK)
        if on_free > 0 and remaining / on_free <= left * (1 + DEADLINE_SLACK):
            limit = left * (1 + DEADLINE_SLACK)
            if (
                job.is_hard
                and fleet.future_budgets(view.t)
                and min(b for b, _ in fleet.future_budgets(view.t)) < job.deadline_hours
            ):
                slack = left * (1 - WINDOW_SLACK)  # room against re-capping in a lower window still to come
                if remaining / on_free <= slack:
                    limit = slack
            if not due and waits:
                return None, due
            return _Entry(
                j, remaining, restart, limit if due or patient is None else min(limit, patient), None, weight
            ), due
        # It cannot meet its deadline on the devices free now: it waits for more, unless it is due (then it is late).
        return (_Entry(j, remaining, restart, None, None, weight) if due else None), due

    # Solves ---------------------------------------------------------------------------------

    def _admit_greedily(self, running, waiting, forced, urgent, solve):
        """Admit the forced jobs that fit, most urgent first; drop running jobs' deadlines if they cannot all hold."""
        best = solve(running + waiting, [])
        if not best.feasible:
            running = [replace(e, deadline=None) for e in running]
            best = solve(running + waiting, [])
        kept: list[int] = []
        for j in forced:
            trial = solve(running + waiting, kept + [j])
            if not trial.feasible and j in urgent and any(e.job == j and e.deadline is not None for e in waiting):
                # Its deadline cannot hold on what is free: start it now anyway; the timeline reports it late.
                lifted = [replace(e, deadline=None) if e.job == j else e for e in waiting]
                trial = solve(running + lifted, kept + [j])
                if trial.feasible:
                    waiting = lifted
            if trial.feasible:
                kept.append(j)
                best = trial
        return best, running, waiting, kept

    def _preempt(self, view: View, running, waiting, kept, unplaced, solve, placed=frozenset()) -> _Outcome | None:
        """Free devices for due jobs by re-placing lower-priority running jobs, one more victim per try."""
        fleet = view.fleet
        top = min(RANK[fleet.jobs[j].priority] for j in unplaced)
        by_job = {r.job: r for r in view.running}
        candidates = sorted(
            (e for e in running if RANK[fleet.jobs[e.job].priority] > top),
            key=lambda e: (
                -RANK[fleet.jobs[e.job].priority],
                fleet.jobs[e.job].weight,
                -e.remaining / fleet.jobs[e.job].work_hours,
                e.job,
            ),
        )[:MAX_VICTIMS]
        for k in range(1, len(candidates) + 1):
            victims = {e.job for e in candidates[:k]}
            free = list(view.free)
            for v in victims:
                for u in by_job[v].uses:
                    free[u.group] += u.count
            entries = [e for e in running if e.job not in victims]
            for e in waiting:
                if e.job in unplaced:
                    entry, _ = self._waiting_entry(view, e.job, e.remaining, e.restart, tuple(free))
                    e = replace(entry, deadline=entry.deadline) if entry is not None else replace(e, deadline=None)
                entries.append(e)
            for v in sorted(victims):
                entry, _ = self._waiting_entry(view, v, by_job[v].remaining, view.fleet.restart_hours(v), tuple(free))
                if entry is not None:
                    entries.append(entry)
            trial = solve(entries, kept + unplaced)
            # A due job that had devices, too few to meet its deadline, must now be in time; one that had none, placed.
            if trial.feasible and all(
                j in trial.uses and (j not in placed or self._in_time(view, j, trial.uses[j])) for j in unplaced
            ):
                return trial
        return None

    def _solve(self, view: View, entries: list[_Entry], must: list[int]) -> _Outcome:
        derived = _Derived(view, sorted(entries, key=lambda e: e.job), set(must))
        if not derived.devices:  # every device is down or reserved and nothing runs: nothing to decide
            return _Outcome(Status.optimal, {})
        hook = derived.lookahead_hook
        limit = self._time_limit_s()
        result = plan(
            derived.workload(limit, self.mip_gap),
            SolveOptions(time_limit_s=limit, mip_gap=self.mip_gap, threads=self.threads, extra_functionality=hook),
        )
        if result.status not in FEASIBLE_STATUSES:
            return _Outcome(result.status, {})
        uses = derived.uses(result)
        if derived.lookahead_holds(uses):
            return _Outcome(result.status, uses)
        # The core's answer breaks a lookahead row (its primal heuristics do not see extra rows):
        # solve the same model once more as a plain MILP, whose every solution satisfies them.
        return derived.direct_solve(self._time_limit_s(), self.mip_gap, self.threads)

    def _time_limit_s(self) -> float:
        """An event solve's time limit: the policy's, or what is left of the planning budget when that is less
        (at least MIN_EVENT_TIME_LIMIT_S; the planner drops the candidate at its next event)."""
        return time_limit_within(self.time_limit_s, self.deadline)

    def _fallback(self, view: View) -> dict[int, Uses]:
        """No solve gave a plan (time limits): running jobs keep their devices, at their lowest caps if budgets
        demand."""
        fleet = view.fleet
        current = {r.job: r.uses for r in view.running}
        total, by_domain = fleet.power(list(current.values()))
        budget = fleet.budget_at(view.t)
        over = (budget is not None and total > budget) or any(
            by_domain.get(d, 0.0) > b for d, b in fleet.queue.power.domains.items()
        )
        if not over:
            return current
        return {
            j: tuple(Use(u.group, fleet.lowest_cap_level(u.group), u.count) for u in uses)
            for j, uses in current.items()
        }


class _Derived:
    """The event's workload for the core planner and the way back to queue jobs and device groups."""

    def __init__(self, view: View, entries: list[_Entry], must: set[int]):
        self.view = view
        self.fleet = view.fleet
        self.entries = entries
        self.must = must
        groups = self.fleet.queue.devices
        taken = {g.id for g in groups} | {g.model for g in groups}
        held = [0] * len(groups)
        self.origin: dict[str, int] = {}  # derived group id -> queue group index
        self.own_models: dict[int, dict[str, str]] = {}  # running job -> {derived model: queue model}
        dedicated = []
        for e in entries:
            if e.fixed is None:
                continue
            self.own_models[e.job] = {}
            for g, count in sorted(_group_counts(e.fixed).items()):
                held[g] += count
                name = _unique(f"night-held-{g}-{e.job}", taken)
                self.origin[name] = g
                self.own_models[e.job][name] = groups[g].model
                dedicated.append(groups[g].model_copy(update={"id": name, "model": name, "count": count}))
        # Devices that are down (failed) or reserved for a job waiting for a repair are no one's to take.
        unavailable = list(view.free)
        for g, group in enumerate(groups):
            unavailable[g] = (
                group.count - view.free[g] - sum(u.count for r in view.running for u in r.uses if u.group == g)
            )
        # Their idle draw is not in the derived workload's devices: it comes off the budgets handed to the core.
        self.idle_off = sum(unavailable[g] * group.idle_w for g, group in enumerate(groups))
        self.idle_off_by_domain: dict[str, float] = {}
        for g, group in enumerate(groups):
            if group.domain is not None:
                self.idle_off_by_domain[group.domain] = (
                    self.idle_off_by_domain.get(group.domain, 0.0) + unavailable[g] * group.idle_w
                )
        shared = []
        for g, group in enumerate(groups):
            count = group.count - held[g] - unavailable[g]
            if count > 0:
                self.origin[group.id] = g
                shared.append(group.model_copy(update={"count": count}) if count != group.count else group)
        self.devices = tuple(shared + dedicated)

    def workload(self, time_limit_s: float, mip_gap: float) -> Workload:
        fleet = self.fleet
        models = tuple(sorted({g.model for g in fleet.queue.devices}))
        jobs = []
        for e in self.entries:
            job = fleet.jobs[e.job]
            if e.fixed is not None:
                count = sum(u.count for u in e.fixed)
                own = self.own_models[e.job]
                limits: tuple[int, int | None] = (count, count)
                priority = Priority.critical
                allowed = tuple(own)
                speed_on = {name: job.speed_on.get(model, 1.0) for name, model in own.items()}
                weight = e.weight / PRIORITY_WEIGHT[priority]
            else:
                priority = job.priority if e.job in self.must else Priority.normal
                limits = (job.min_devices, job.max_devices)
                allowed = job.allowed_models if job.allowed_models is not None else models
                speed_on = job.speed_on
                weight = e.weight / PRIORITY_WEIGHT[priority]
            jobs.append(
                Job(
                    id=job.id,
                    work_hours=max(e.remaining, 1e-12),
                    parallel_fraction=job.parallel_fraction,
                    priority=priority,
                    weight=min(max(weight, 1e-6), 1e6),
                    deadline_hours=e.deadline,
                    min_devices=limits[0],
                    max_devices=limits[1],
                    memory_gb=job.memory_gb,
                    allowed_models=allowed,
                    speed_on=speed_on,
                )
            )
        return Workload(
            name=f"{fleet.queue.name[:150]}@{self.view.t:.6g}h",
            devices=self.devices,
            jobs=tuple(jobs),
            power=self._power(),
            objective="weighted_speedup",
            options=Options(time_limit_s=time_limit_s, mip_gap=mip_gap),
        )

    def _power(self) -> Power:
        """The budgets in force now, less the idle draw of devices that are down or reserved (not in the model)."""
        budget = self.fleet.budget_at(self.view.t)
        domains = {
            d: max(0.0, b - self.idle_off_by_domain.get(d, 0.0)) for d, b in self.fleet.queue.power.domains.items()
        }
        return Power(budget_w=None if budget is None else max(0.0, budget - self.idle_off), domains=domains)

    def uses(self, result: Plan) -> dict[int, Uses]:
        out: dict[int, Uses] = {}
        for placement in result.placements:
            if placement.admitted:
                j = self.fleet.job_index[placement.job]
                out[j] = _merge_uses(self._use(j, a.device, a.cap_w, a.speed, a.count) for a in placement.allocations)
        return out

    def _use(self, j: int, device: str, cap_w: float, speed: float, count: int) -> Use:
        g = self.origin[device]
        levels = self.fleet.queue.devices[g].power_levels
        same_cap = [
            lv for lv in range(len(levels)) if math.isclose(levels[lv].cap_w, cap_w, rel_tol=1e-12, abs_tol=1e-12)
        ]
        return Use(g, min(same_cap, key=lambda lv: (abs(self.fleet.speed(j, g, lv) - speed), lv)), count)

    # The lookahead rows -----------------------------------------------------------------------

    def _ends(self) -> dict[int, float]:
        """When each job ends at the latest: on its devices (or its slowest allowed ones) at the slowest level."""
        fleet, t = self.fleet, self.view.t
        ends = {}
        for e in self.entries:
            if e.fixed is not None:
                s = fleet.speedup(
                    e.job, tuple(Use(u.group, fleet.slowest_level(e.job, u.group), u.count) for u in e.fixed)
                )
            else:
                s = fleet.slowest_speedup(e.job)
            ends[e.job] = t + e.restart + (e.remaining / s if s > 0 else math.inf)
        return ends

    def _rows(self) -> list[tuple[float, float, list[int]]]:
        """(window start, budget, jobs that may still run then) for each later change of the global budget."""
        ends = self._ends()
        rows = []
        for b, budget in self.fleet.future_budgets(self.view.t):
            late = [e.job for e in self.entries if ends[e.job] > b - TIME_TOL_HOURS]
            if late:
                rows.append((b, budget, late))
        return rows

    def lookahead_hook(self, builder, data) -> None:
        """idle + sum_{j may run at b} (lowest cap_g - idle_g) n[j,g,l] <= budget_b (W) for each later window start
        b."""
        position = {job.id: k for k, job in enumerate(data.jobs)}
        rows = []
        for b, budget, late in self._rows():
            terms = [
                (
                    "n",
                    o.key,
                    self.fleet.lowest_cap_w(self.origin[data.groups[o.group].id]) - data.groups[o.group].idle_w,
                )
                for j in late
                for o in data.options_of_job[position[self.fleet.jobs[j].id]]
            ]
            if terms:  # with no placeable device the draw is the idle draw, which every budget covers
                rows.append((b, terms, -math.inf, budget - self.fleet.idle_w))
        builder.add_rows("night_lookahead", rows)

    def lookahead_holds(self, uses: dict[int, Uses]) -> bool:
        fleet = self.fleet
        for _, budget, late in self._rows():
            draw = fleet.idle_w + sum(
                u.count * (fleet.lowest_cap_w(u.group) - fleet.queue.devices[u.group].idle_w)
                for j in late
                for u in uses.get(j, ())
            )
            if draw > budget + POWER_TOL_W:
                return False
        return True

    def direct_solve(self, time_limit_s: float, mip_gap: float, threads: int) -> _Outcome:
        """The derived model with its lookahead rows solved once as a MILP (modelled speedups, no cut refinement)."""
        from optsched.model.data import ModelData
        from optsched.solve.backends import build_model
        from optsched.solve.highs import Outcome, SolveRequest

        data = ModelData(self.workload(time_limit_s, mip_gap))
        builder = build_model(data, extra_functionality=self.lookahead_hook)
        result = builder.solve(SolveRequest(time.monotonic() + time_limit_s, mip_gap, threads=threads))
        if result.outcome not in (Outcome.optimal, Outcome.limit_with_solution):
            return _Outcome(Status.no_solution, {})
        counts = builder.values(result, "n", [o.key for o in data.options])
        out: dict[int, list[Use]] = {}
        for o in data.options:
            n = round(counts[o.key])
            if n > 0:
                j = self.fleet.job_index[data.jobs[o.job].id]
                g = self.origin[data.groups[o.group].id]
                out.setdefault(j, []).append(Use(g, o.level, n))
        status = Status.optimal if result.outcome == Outcome.optimal else Status.time_limit
        return _Outcome(status, {j: _merge_uses(us) for j, us in out.items()})


def fair_weights(view: View, weighting: str) -> dict[int, float]:
    """The weights of the running and ready jobs under a fairness objective (`weighting` "progress" or
    "finish_time"; optsched.night.fairness): attained service so far sets each event's objective."""
    queue = view.fleet.queue
    jobs = sorted({r.job for r in view.running} | set(view.ready))
    if weighting == "finish_time":
        best = [view.fleet.best_speedup(j) for j in range(len(queue.jobs))]
        return finish_time_weights(queue, jobs, view.work_left, view.t, best)
    return progress_weights(queue, jobs, view.work_left)


def _weight(view: View, j: int, remaining: float, soft: bool = False) -> float:
    """Priority weight x weight per hour of the job's fastest remaining run (at least a quarter hour); with `soft`,
    times 1 + SOFT_MISS_HOURS / slack for a soft deadline still within reach (slack = deadline - now - fastest run, h):
    the MILP then values speed most where it ends a job soonest, as weighted shortest remaining time does, and a
    soft deadline about to be missed costs what the ranking charges for it (hard deadlines are constraints)."""
    fleet = view.fleet
    best = fleet.best_speedup(j)
    run = remaining / best if best > 0 else 1.0
    weight = fleet.jobs[j].objective_weight / max(run, 0.25)
    job = fleet.jobs[j]
    if not soft or job.is_hard or job.deadline_hours is None:
        return weight
    slack = job.deadline_hours * (1 + DEADLINE_SLACK) - view.t - view.restart_of(j) - run
    if best <= 0 or slack < 0:
        return weight  # already lost: no longer worth anything extra
    return weight * (1 + SOFT_MISS_HOURS / max(slack, SOFT_SLACK_FLOOR_HOURS))


def _group_counts(uses: Uses) -> dict[int, int]:
    counts: dict[int, int] = {}
    for u in uses:
        counts[u.group] = counts.get(u.group, 0) + u.count
    return counts


def _merge_uses(uses) -> Uses:
    """One Use per (group, level), sorted."""
    counts: dict[tuple[int, int], int] = {}
    for u in uses:
        counts[u.group, u.level] = counts.get((u.group, u.level), 0) + u.count
    return tuple(Use(g, lv, n) for (g, lv), n in sorted(counts.items()) if n > 0)


def _unique(name: str, taken: set[str]) -> str:
    while name in taken:
        name += "'"
    taken.add(name)
    return name


def time_limit_within(limit_s: float, deadline: float | None) -> float:
    """`limit_s`, or what is left until `deadline` (time.monotonic(); None: no deadline) when that is less, at least
    MIN_EVENT_TIME_LIMIT_S: the time limit of a solve under the planning budget."""
    if deadline is None:
        return limit_s
    return max(MIN_EVENT_TIME_LIMIT_S, min(limit_s, deadline - time.monotonic()))
