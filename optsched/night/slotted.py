"""The non-preemptive time-indexed MILP of the night, and the policy that carries out its schedule.

The night is cut into slots up to a horizon H (window edges are slot edges, optsched.night.bound.slot_edges). A
*start* s = (j, g, l, k, t) says: job j starts at slot edge a_t on k devices of group g at power level l and runs
to its end a_t + d, d = W_j / S_j(k devices of g at l) hours, without preemption, move or restart: the way the
night's engine runs a job when nothing fails (plan_night's default, preempt=False). For each job the model has
binaries z[s] over its starts (counts SLOTTED_COUNTS up to its max_devices, every level on the upper hull of the
group's draw and speed and the job's fastest, starts from its release; none that ends after a hard deadline
unless every one does) and minimises the weighted mean completion, a soft deadline missed priced as in the
planner's `score` (SOFT_MISS_HOURS later):

    min sum_s z[s] w_j (end_s + SOFT_MISS_HOURS [end_s > soft deadline_j]) / sum_j w_j          (hours)

Its optimum (the *slotted optimum*) is the best night among those that start jobs at slot edges on one group
each: neither a lower bound (a timeline may start between edges, or mix groups, and do better) nor always
reached by the planner. optsched.night.bound is the lower bound; this model answers the other question, how far
a plan is from the best non-preemptive night this discretisation can see, and gives plan_night its `milp-slotted`
candidate: `SlottedPolicy` takes the jobs in the order of their slotted starts, each on its group, level and
count, as soon as its devices are free and its draw fits every budget until it ends (`fits`), so the engine's
timeline starts every job no later than its slot would unless a job before it ran late. With `reserve`
(`milp-slotted-reserved`) a job not yet ready holds its slot's devices and draw from its slotted start on against
the jobs after it in the schedule, which start early only where they leave it room: a job released later is not
left without devices by one that was ready first.
"""

from __future__ import annotations

import bisect
import functools
import logging
import math
import time
from dataclasses import dataclass, field, replace

import highspy
import numpy as np

from optsched.night.bound import Matrix, hull_levels, slot_edges
from optsched.night.dispatch import fits, free_over
from optsched.night.engine import Decision, Running, View
from optsched.night.fleet import Fleet, Use, Uses
from optsched.night.milp import SOFT_MISS_HOURS
from optsched.schema.night import NightQueue
from optsched.schema.tolerances import TIME_TOL_HOURS
from optsched.solve.highs import MIN_SOLVE_S, Outcome, SolveResult, run_highs

logger = logging.getLogger(__name__)

# Device counts a start may take (and each job's max_devices): the doubling steps and their midpoints, so a
# start is at most 1.5 x short of any count (in devices) while the columns stay few.
SLOTTED_COUNTS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)
# Slots: SLOTTED_SLOTS over the horizon, none shorter than SLOTTED_MIN_SLOT_HOURS (5 min).
SLOTTED_SLOTS = 48
SLOTTED_MIN_SLOT_HOURS = 1.0 / 12.0
# Queues with more start columns are not modelled (short-302 of bench/night_queues.py: 27 jobs, 18,766 columns,
# within 0.3 % of its optimum after 20 s on 2 cores).
SLOTTED_MAX_COLUMNS = 40_000
SLOTTED_TIME_LIMIT_S = 10.0
SLOTTED_MIP_GAP = 1e-3
# The LP relaxation may take this share of the time limit; the MILP after it keeps each job's SLOTTED_KEEP starts
# of least reduced cost (`_restricted`).
RESTRICTED_LP_SHARE = 0.4
SLOTTED_KEEP = 40


@dataclass(frozen=True)
class Start:
    """Job `job` starts at `start` (hours, a slot edge) on `count` devices of group `group` at level `level`."""

    job: int
    group: int
    level: int
    count: int
    slot: int
    start: float
    end: float


@dataclass
class Slotted:
    """The model's starts and rows (built by `build`, one function per constraint family)."""

    queue: NightQueue
    fleet: Fleet
    edges: list[float]
    soft_miss_hours: float = SOFT_MISS_HOURS
    starts: list[Start] = field(default_factory=list)
    columns_of: dict[int, list[int]] = field(default_factory=dict)  # job -> its starts' columns
    held: list[range] = field(default_factory=list)  # column -> the slots its start holds devices in
    m: Matrix = field(default_factory=Matrix)

    def covered(self, s: Start) -> range:
        """Slots t with [a_t, a_t+1) meeting [start, end): the slots the start holds its devices in."""
        last = s.slot
        while last + 1 < len(self.edges) - 1 and self.edges[last + 1] < s.end - 1e-9:
            last += 1
        return range(s.slot, last + 1)

    def draw(self, s: Start) -> tuple[float, tuple[str | None, ...]]:
        """The start's draw above idle (W) and the budgets it counts against: the global one (None), its domain's."""
        group = self.queue.devices[s.group]
        extra = s.count * (group.power_levels[s.level].cap_w - group.idle_w)
        return extra, (None, group.domain) if group.domain in self.queue.power.domains else (None,)

    @functools.cached_property
    def roomiest(self) -> dict[str | None, float]:
        """Per budget, the most it allows above idle in any slot (W): `budgets` at its largest, computed once for
        every job's ways."""
        return {scope: max(per_slot, default=math.inf) for scope, per_slot in self.budgets().items()}

    def budgets(self) -> dict[str | None, list[float]]:
        """Per budget (None: the global one, else a domain) and slot, the watts above idle it allows (inf: none);
        window edges are slot edges, so the global budget is the one in force at the slot's middle."""
        q, fleet, slots = self.queue, self.fleet, len(self.edges) - 1
        out: dict[str | None, list[float]] = {None: []}
        for t in range(slots):
            budget = q.power.budget_at((self.edges[t] + self.edges[t + 1]) / 2)
            out[None].append(math.inf if budget is None else budget - fleet.idle_w)
        for domain, limit in q.power.domains.items():
            out[domain] = [limit - fleet.idle_of_domain(domain)] * slots
        return out


@dataclass(frozen=True)
class SlottedSchedule:
    """The best schedule found: its starts (one per job), weighted mean completion, the solver's bound on the
    priced objective, and how the solve ended."""

    outcome: Outcome
    starts: tuple[Start, ...] = ()
    weighted_completion_hours: float | None = None
    objective: float | None = None
    bound: float | None = None
    reason: str | None = None
    seconds: float = 0.0


def counts(most: int, least: int) -> list[int]:
    """SLOTTED_COUNTS within [least, most], and `most` itself."""
    return sorted({k for k in (*SLOTTED_COUNTS, most) if least <= k <= most})


def job_options(model: Slotted, j: int) -> list[tuple[int, int, int, float, range]]:
    """(group, level, count, hours, slots) of job j: each way it can run whose draw alone fits some slot's budgets,
    and the slots it can start in on it (from its release, ending by the horizon, and by its hard deadline if any
    way can)."""
    q, fleet, edges = model.queue, model.fleet, model.edges
    job = q.jobs[j]
    first = bisect.bisect_left(edges, job.release_hours - 1e-9)
    # A way that draws more than a budget allows in any slot never runs, and a hard deadline that only such ways
    # could keep must not rule out the ways that can run (the model would have no schedule).
    roomiest = model.roomiest
    out = []
    for g in fleet.eligible_groups[j]:
        levels = sorted({fleet.fastest_level(j, g), *hull_levels(q, g)})
        for k in counts(min(fleet.max_devices(j), q.devices[g].count), max(1, job.min_devices)):
            for level in levels:
                extra, scopes = model.draw(Start(j, g, level, k, first, 0.0, 0.0))
                if any(extra > roomiest[scope] + 1e-9 for scope in scopes):
                    continue
                hours = job.work_hours / fleet.speedup(j, (Use(g, level, k),))
                last = bisect.bisect_right(edges, edges[-1] - hours + 1e-9, hi=len(edges) - 1)
                out.append((g, level, k, hours, range(first, last)))
    deadline = fleet.hard_deadline(j)
    if deadline is not None:
        kept = [
            (g, level, k, hours, range(slots.start, bisect.bisect_right(edges, deadline - hours + 1e-9, hi=slots.stop)))
            for g, level, k, hours, slots in out
        ]
        if any(len(option[4]) for option in kept):
            out = kept
    return out


def job_starts(model: Slotted, j: int) -> list[Start]:
    """Every start of job j (`job_options`)."""
    edges = model.edges
    return [
        Start(j, g, level, k, t, edges[t], edges[t] + hours)
        for g, level, k, hours, slots in job_options(model, j)
        for t in slots
    ]


def add_starts(model: Slotted) -> None:
    """z[s] in {0, 1} with cost w_j (end_s + soft_miss_hours [late for a soft deadline]) / sum w (hours)."""
    q = model.queue
    total = sum(job.objective_weight for job in q.jobs)
    for j, job in enumerate(q.jobs):
        soft = None if job.is_hard else job.deadline_hours
        model.columns_of[j] = []
        for s in job_starts(model, j):
            late = soft is not None and s.end > soft + 1e-9
            price = model.soft_miss_hours if late else 0.0
            col = model.m.column(0.0, 1.0, job.objective_weight * (s.end + price) / total, True)
            model.starts.append(s)
            model.columns_of[j].append(col)
            model.held.append(model.covered(s))


def add_one_start(model: Slotted) -> None:
    """one_start[j]: sum_{s of j} z[s] = 1 (every job runs once)."""
    for cols in model.columns_of.values():
        model.m.row([(col, 1.0) for col in cols], lower=1.0, upper=1.0)


def add_device_capacity(model: Slotted) -> None:
    """device_capacity[g,t]: sum of k_s z[s] over starts of group g holding slot t <= count_g (devices)."""
    rows: dict[tuple[int, int], list[tuple[int, float]]] = {}
    for col, s in enumerate(model.starts):
        for t in model.held[col]:
            rows.setdefault((s.group, t), []).append((col, float(s.count)))
    for (g, _), terms in sorted(rows.items()):
        model.m.row(terms, upper=float(model.queue.devices[g].count))


def add_power_budgets(model: Slotted) -> None:
    """power_budget[t], domain_budget[d,t]: idle draw + sum k_s (cap - idle_w) z[s] over starts holding slot t
    <= the budget in force (W; window edges are slot edges)."""
    rows: dict[tuple[str | None, int], list[tuple[int, float]]] = {}
    for col, s in enumerate(model.starts):
        extra, scopes = model.draw(s)
        for t in model.held[col]:
            for scope in scopes:
                rows.setdefault((scope, t), []).append((col, extra))
    budgets = model.budgets()
    for (scope, t), terms in sorted(rows.items(), key=lambda r: (r[0][0] or "", r[0][1])):
        if budgets[scope][t] < math.inf:
            model.m.row(terms, upper=budgets[scope][t])


def add_chains(model: Slotted) -> None:
    """after[i,j]: sum_{s of j} start_s z[s] - sum_{s of i} end_s z[s] >= 0 (hours)."""
    for j, preds in enumerate(model.fleet.predecessors):
        for i in preds:
            terms = [(c, model.starts[c].start) for c in model.columns_of[j]]
            terms += [(c, -model.starts[c].end) for c in model.columns_of[i]]
            model.m.row(terms, lower=0.0)


def build(queue: NightQueue, fleet: Fleet, edges: list[float], soft_miss_hours: float = SOFT_MISS_HOURS) -> Slotted:
    """The slotted model: a flat list of its constraint families."""
    model = Slotted(queue, fleet, edges, soft_miss_hours)
    add_starts(model)
    add_one_start(model)
    add_device_capacity(model)
    add_power_budgets(model)
    add_chains(model)
    return model


def serial_schedule(model: Slotted, order: tuple[int, ...]) -> list[int] | None:
    """A feasible choice of starts (columns), or None: the jobs in `order` (each after its predecessors), each
    taking its earliest-ending start that fits the devices and budgets the jobs before it left (the serial
    schedule generation scheme of project scheduling). HiGHS starts from it."""
    slots = len(model.edges) - 1
    devices = {g: [float(group.count)] * slots for g, group in enumerate(model.queue.devices)}
    budgets = model.budgets()
    ends: dict[int, float] = {}
    chosen: list[int] = []
    for j in model.fleet.after_predecessors(order):
        ready = max((ends[i] for i in model.fleet.predecessors[j]), default=0.0)
        best: int | None = None
        for col in model.columns_of[j]:
            s = model.starts[col]
            if s.start < ready - 1e-9 or (best is not None and s.end >= model.starts[best].end):
                continue
            extra, scopes = model.draw(s)
            if all(
                devices[s.group][t] >= s.count - 1e-9 and all(budgets[d][t] >= extra - 1e-9 for d in scopes)
                for t in model.held[col]
            ):
                best = col
        if best is None:
            return None
        s = model.starts[best]
        extra, scopes = model.draw(s)
        for t in model.held[best]:
            devices[s.group][t] -= s.count
            for d in scopes:
                budgets[d][t] -= extra
        ends[j] = s.end
        chosen.append(best)
    return chosen


def _restricted(
    h: highspy.Highs, model: Slotted, first: list[int] | None, deadline: float, mip_gap: float
) -> tuple[SolveResult, float | None]:
    """The MILP's result and the LP bound: the LP relaxation, then the MILP over each job's SLOTTED_KEEP starts of
    least reduced cost (and the serial schedule's) from the serial schedule, with the starts that reduced-cost
    fixing cannot rule out added and the MILP solved again until none is left (optimal: the model's optimum) or
    `deadline`. Why: on short-302 of bench/night_queues.py HiGHS on every start reached 1.46 h in 10 s and 1.367 h
    in 14 s (by its own sub-MIPs after fixing what its LP leaves out), the restricted MILP 1.365 h in 5 s; its
    presolve alone on every start (600,000 nonzeros) ignores an interrupt for over a second. The LP bound holds
    for the whole model."""
    n = len(model.starts)
    warm = None
    if first is not None:
        values = np.zeros(n)
        values[first] = 1.0
        warm = (np.arange(n, dtype=np.int32), values)
    lp_end = time.monotonic() + RESTRICTED_LP_SHARE * (deadline - time.monotonic())
    lp = run_highs(h, wall_deadline=lp_end, mip_gap=mip_gap, relax=True, presolve=True)
    keep = np.zeros(n, dtype=bool)
    reduced = np.zeros(n)
    if lp.outcome is Outcome.optimal:
        reduced = np.array(h.getSolution().col_dual)
        for cols in model.columns_of.values():
            keep[sorted(cols, key=lambda c: reduced[c])[:SLOTTED_KEEP]] = True
    if first is not None:
        keep[first] = True
    if not keep.any():
        return SolveResult(Outcome.limit_without_solution, None, None, 0.0, None), None
    bound = lp.incumbent if lp.outcome is Outcome.optimal else None
    out = np.flatnonzero(~keep).astype(np.int32)
    h.changeColsBounds(len(out), out, np.zeros(len(out)), np.zeros(len(out)))
    best: SolveResult | None = None
    while True:
        result = run_highs(h, wall_deadline=deadline, mip_gap=mip_gap, presolve=True, warm_start=warm)
        if result.outcome is Outcome.infeasible and best is None and len(out) and not result.abandoned:
            # The starts kept hold no schedule (no serial one fitted the horizon either): every start, then.
            h.changeColsBounds(len(out), out, np.zeros(len(out)), np.ones(len(out)))
            out = out[:0]
            continue
        if result.values is None or result.incumbent is None or bound is None or result.abandoned:
            # A round that found nothing (stopped in its presolve) leaves the previous round's schedule standing.
            kept = result if best is None or result.values is not None else best
            return replace(kept, outcome=_unproven(kept.outcome)), bound
        best = result
        # Reduced-cost fixing: a schedule with start c costs at least the LP bound + c's reduced cost, so the
        # starts left out whose reduced cost is below the incumbent's distance to the bound may still improve it.
        missing = out[reduced[out] < result.incumbent - bound - 1e-9]
        if result.outcome is Outcome.optimal and not len(missing):
            return result, bound
        if not len(missing) or deadline - time.monotonic() < MIN_SOLVE_S:
            return replace(result, outcome=_unproven(result.outcome)), bound
        # At most as many again as the first round kept, least reduced cost first: all of them at once (15,000
        # on small-7 of bench/night_queues.py) kept HiGHS in its presolve past the time limit.
        missing = missing[np.argsort(reduced[missing], kind="stable")][: SLOTTED_KEEP * len(model.queue.jobs)]
        h.changeColsBounds(len(missing), missing, np.zeros(len(missing)), np.ones(len(missing)))
        out = np.setdiff1d(out, missing).astype(np.int32)
        warm = (np.arange(n, dtype=np.int32), np.round(result.values))


def _unproven(outcome: Outcome) -> Outcome:
    """An optimum over some of the starts only is a solution at the limit, not the model's optimum."""
    return Outcome.limit_with_solution if outcome is Outcome.optimal else outcome


def slotted_edges(queue: NightQueue, horizon: float) -> list[float]:
    """Slot edges over the horizon: SLOTTED_SLOTS slots, none shorter than SLOTTED_MIN_SLOT_HOURS, and one slot more
    for each job along the longest `after` chain but one. Why: each job of a chain starts at the first edge after
    its predecessor ends, up to a slot later than a timeline would; chains-312 of bench/night_queues.py (chains of
    up to 6 jobs) had no schedule by 1.2 x its plan's makespan without them. The release of each job with a hard
    deadline is an edge too: the first edge after it may leave too little time to keep the deadline."""
    slot = max(SLOTTED_MIN_SLOT_HOURS, horizon / SLOTTED_SLOTS)
    edges = slot_edges(queue, horizon + (chain_length(queue) - 1) * slot, slot)
    hard = {round(job.release_hours, 9) for job in queue.jobs if job.is_hard and 0 < job.release_hours < edges[-1]}
    return sorted(set(edges) | hard)


def chain_length(queue: NightQueue) -> int:
    """Jobs along the longest `after` chain (1 without chains)."""
    fleet = Fleet(queue)
    length = [1] * len(queue.jobs)
    for j in fleet.topological_order:
        length[j] = 1 + max((length[i] for i in fleet.predecessors[j]), default=0)
    return max(length, default=1)


def start_columns(queue: NightQueue, fleet: Fleet, edges: list[float]) -> int:
    """How many starts the model would have (each one a binary column)."""
    model = Slotted(queue, fleet, edges)
    return sum(len(option[4]) for j in range(len(queue.jobs)) for option in job_options(model, j))


def solve_slotted(
    queue: NightQueue,
    *,
    horizon_hours: float,
    time_limit_s: float = SLOTTED_TIME_LIMIT_S,
    mip_gap: float = SLOTTED_MIP_GAP,
    max_columns: int = SLOTTED_MAX_COLUMNS,
    restart_hours: float = 0.0,
    order: tuple[int, ...] | None = None,
    soft_miss_hours: float = SOFT_MISS_HOURS,
) -> SlottedSchedule:
    """The best non-preemptive slotted schedule of `queue` that ends by `horizon_hours`, within `time_limit_s`
    (the best found when it stops there: outcome limit_with_solution, with the solver's bound). HiGHS starts from
    the serial schedule of the jobs in `order` (default: the queue's) when it fits the horizon. `soft_miss_hours`
    prices a soft miss (0: the plain weighted mean completion)."""
    started = time.monotonic()
    fleet = Fleet(queue, restart_hours)
    if not queue.jobs or not horizon_hours > 0:
        return SlottedSchedule(Outcome.limit_without_solution, reason="no jobs or no horizon")
    if any(fleet.best_speedup(j) <= 0 for j in range(len(queue.jobs))):
        return SlottedSchedule(Outcome.infeasible, reason="a job has no devices it can run on")
    edges = slotted_edges(queue, horizon_hours)
    columns = start_columns(queue, fleet, edges)
    if columns > max_columns:
        return SlottedSchedule(
            Outcome.limit_without_solution, reason=f"{columns} start columns over the limit of {max_columns}"
        )
    model = build(queue, fleet, edges, soft_miss_hours)
    if not all(model.columns_of.values()):
        return SlottedSchedule(Outcome.infeasible, reason="a job has no start that ends by the horizon")
    h, _ = model.m.to_highs()
    deadline = started + time_limit_s
    first = serial_schedule(model, order if order is not None else tuple(range(len(queue.jobs))))
    result, lp_bound = _restricted(h, model, first, deadline, mip_gap)
    seconds = time.monotonic() - started
    logger.debug("slotted MILP %s: %s / %s in %.2f s", result.outcome.value, result.incumbent, result.bound, seconds)
    # The restricted MILP's own bound holds only for the starts it kept.
    bound = lp_bound if result.outcome is not Outcome.optimal else result.incumbent
    if result.values is None or result.incumbent is None:
        return SlottedSchedule(result.outcome, bound=bound, seconds=seconds, reason="no schedule found")
    chosen = tuple(s for s, v in zip(model.starts, result.values, strict=True) if v > 0.5)
    total = sum(job.objective_weight for job in queue.jobs)
    wmct = sum(queue.jobs[s.job].objective_weight * s.end for s in chosen) / total
    return SlottedSchedule(
        result.outcome,
        starts=tuple(sorted(chosen, key=lambda s: (s.start, s.end, s.job))),
        weighted_completion_hours=wmct,
        objective=result.incumbent,
        bound=bound,
        seconds=seconds,
    )


class SlottedPolicy:
    """Carries out a slotted schedule: ready jobs in the order of their slotted starts, each on its group, level
    and count (fewer when failures leave fewer devices up) as soon as they are free and its draw fits; a job that
    cannot start keeps its devices from the jobs after it, which may take only what is left (backfilling)."""

    def __init__(self, schedule: SlottedSchedule, name: str = "milp-slotted", reserve: bool = False):
        self.name = name
        self.schedule = schedule
        self.reserve = reserve
        self.order = [s.job for s in schedule.starts]  # by slotted start (solve_slotted sorts them)
        self.start = {s.job: s for s in schedule.starts}
        self._reported = False

    def decide(self, view: View) -> Decision:
        uses = {r.job: r.uses for r in view.running}
        ends = {r.job: view.finish_at(r) for r in view.running}
        free = list(view.free)
        stalled = {r.job: r for r in view.stalled}
        ready = set(view.ready)
        running = set(uses)
        # With `reserve`, jobs not yet ready hold their slot's devices and draw from their slotted start on (from
        # now when it has passed) against the jobs ranked after them, as stalled jobs hold theirs from their
        # resumption: a job starts early only where it leaves them room.
        held: dict[int, Running] = {}
        for j in self.order:
            s = self.start[j]
            pending = self.reserve and j not in ready and j not in running and view.work_left.get(j, 0.0) > 0.0
            if j not in ready and not pending:
                continue
            wanted = self._wanted(view, j, s)
            if pending:
                held[j] = Running(j, wanted, 0.0, 0.0, since=max(view.t, s.start))
                continue
            speed = view.fleet.speedup(j, wanted)
            end = view.t + view.restart_of(j) + (view.remaining[j] / speed if speed > 0 else math.inf)
            k = wanted[0].count
            if (
                free[s.group] >= k
                and self._room(view, wanted[0], end, uses, ends, held)
                and fits(view, wanted, end, uses, ends, stalled={**stalled, **held})
            ):
                uses[j], ends[j] = wanted, end
                free[s.group] -= k
            else:
                free[s.group] = max(0, free[s.group] - k)
        # The schedule's solve is the night's one decision at a time limit, if it stopped there.
        limited = not self._reported and self.schedule.outcome is not Outcome.optimal
        self._reported = True
        return Decision(uses, solve=self.name, time_limited=limited)

    @staticmethod
    def _wanted(view: View, j: int, s: Start) -> Uses:
        """Job j's slotted group, level and count (its min_devices at least; fewer while devices are down)."""
        up = view.devices_up()[s.group]
        return (Use(s.group, s.level, max(view.fleet.jobs[j].min_devices, min(s.count, up))),)

    @staticmethod
    def _room(view: View, wanted: Use, end: float, uses, ends, held: dict[int, Running]) -> bool:
        """`wanted`'s devices are free beside the running jobs' and the held ones' at each held job's start before
        `end` (from now on)."""
        instants = sorted({r.since for r in held.values() if r.since < end - TIME_TOL_HOURS})
        if not instants:
            return True
        # Devices up less every running job's, then the dispatch's sweep: those ending by each instant come back,
        # the held ones starting by then are taken.
        base = list(view.devices_up())
        for us in uses.values():
            for u in us:
                base[u.group] -= u.count
        reserved = [(r.since, None, r.uses) for r in held.values()]
        return all(then[wanted.group] >= wanted.count for then in free_over(base, uses, ends, instants, reserved))
