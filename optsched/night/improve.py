"""An improvement phase after the candidates: local search over the order in which the dispatch takes the jobs.

The dispatch (optsched.night.dispatch) is a list scheduler: given an order of the jobs it builds a whole timeline
in milliseconds, with its reservations, backfilling, caps and budgets. The search starts from the order in which
the best candidate's timeline starts its jobs (jobs that never ran last) and tries *insert moves*: one job taken
out of the order and put back `d` places earlier or later, for d in SEARCH_STEPS (d = 1 is a swap of neighbours),
sweeping the order and keeping a move as soon as its timeline scores better (first improvement). It ends after a
sweep that kept nothing, or after `evaluations` timelines: a count, not a clock, so the night stays deterministic.
Every timeline it tries comes from the same engine and rules as the candidates'.

The deadline repair (`repair_deadlines`) is the same kind of search with another aim: it moves only jobs that
missed their deadline, only earlier (or to the front), and keeps a move only when the timeline misses fewer
deadlines (hard, then jobs never run, then soft), or is the first within the makespan and energy the planner
allows it, and stays within them.

The reference search is `local_search` again with a third aim: lower a timeline's `shortfall`, how many of the
reference's four measures (optsched.night.planner.meets_reference: soft misses, weighted completion, makespan,
energy against the best list scheduler's) it misses and by how much, with no more hard misses or jobs never run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from optsched.schema.night import JobTimeline, NightPlan

# Queues with more jobs skip the search: a dispatch timeline of 55 jobs costs 0.25 s on 2 cores, 0.03-0.08 s at
# 30 jobs (bench/results/night.md), and the 61-job sample night must not plan slower.
SEARCH_MAX_JOBS = 60
# Queues with fewer jobs skip it too: on a handful of jobs the candidates leave little to find, and the search's
# timelines (up to SEARCH_EVALUATIONS of them) would cost more than the candidates did.
SEARCH_MIN_JOBS = 10
# Timelines the search may try (each one dispatch run through the engine): SEARCH_EVALUATIONS, fewer on longer
# queues (SEARCH_JOB_EVALUATIONS / jobs), whose timelines cost more.
SEARCH_EVALUATIONS = 150
SEARCH_JOB_EVALUATIONS = 4_500
# How far an insert move takes a job (places in the order), tried in this order.
SEARCH_STEPS = (1, 2, 4, 8)
# The deadline repair's moves: a job that missed its deadline taken this many places earlier, tried in this order.
REPAIR_STEPS = (1, 2, 4, 8, 16, 32, 64)
# Timelines the repair may try: REPAIR_EVALUATIONS, fewer on longer queues (REPAIR_JOB_EVALUATIONS / jobs): at 120
# jobs a timeline costs about 0.27 s on 2 cores, and 30 of them keep the night well within its 20-s budget.
REPAIR_EVALUATIONS = 80
REPAIR_JOB_EVALUATIONS = 3_600

# The reference search's timelines (`shortfall` lowered by insert moves): REFERENCE_EVALUATIONS, fewer on longer
# queues (REFERENCE_JOB_EVALUATIONS / jobs: 60 at 120 jobs, 8-15 s on 2 cores, so the budget often ends it first).
REFERENCE_EVALUATIONS = 80
REFERENCE_JOB_EVALUATIONS = 7_200


def reference_evaluations(jobs: int) -> int:
    """Timelines the reference search may try on a queue of this many jobs."""
    return min(REFERENCE_EVALUATIONS, REFERENCE_JOB_EVALUATIONS // max(1, jobs))


def shortfall(plan: NightPlan, reference: Sequence[NightPlan], slack: float) -> tuple[int, float]:
    """How far a timeline is from meeting the reference (optsched.night.planner.meets_reference): how many of its
    four measures miss it (soft misses above the fewest, weighted completion above the least, makespan and energy
    above (1 + slack) x the least), and the sum of their relative excesses; (0, 0.0) when it meets it."""
    s = plan.summary
    best = [r.summary for r in reference]
    soft = min(len(r.soft_deadlines_missed) for r in best)
    wmct = min(math.inf if r.weighted_mean_completion_hours is None else r.weighted_mean_completion_hours for r in best)
    longest = (1.0 + slack) * min(r.makespan_hours for r in best)
    costliest = (1.0 + slack) * min(r.energy_kwh for r in best)
    own = math.inf if s.weighted_mean_completion_hours is None else s.weighted_mean_completion_hours
    # (value, limit, scale): missed when value > limit + 1e-9, as meets_reference has it; by (value - limit) / scale
    measures = [
        (len(s.soft_deadlines_missed), soft, max(1, soft)),
        (own, wmct, wmct),
        (s.makespan_hours, longest, longest),
        (s.energy_kwh, costliest, costliest),
    ]
    missed = [(value - limit) / max(scale, 1e-9) for value, limit, scale in measures if value > limit + 1e-9]
    return len(missed), round(sum(missed), 9)


def search_evaluations(jobs: int) -> int:
    """Timelines the search may try on a queue of this many jobs."""
    return min(SEARCH_EVALUATIONS, SEARCH_JOB_EVALUATIONS // max(1, jobs))


def repair_evaluations(jobs: int) -> int:
    """Timelines the deadline repair may try on a queue of this many jobs (over all its starting points)."""
    return min(REPAIR_EVALUATIONS, REPAIR_JOB_EVALUATIONS // max(1, jobs))


def ranks(order: tuple[int, ...]) -> tuple[int, ...]:
    """Each job's place in the order (what DispatchPolicy's order "ranked" takes)."""
    return tuple(sorted(range(len(order)), key=order.__getitem__))


def start_order(plan: NightPlan, jobs: list[str]) -> tuple[int, ...]:
    """Job indices (into `jobs`, the queue's ids) by their start in the plan, then finish; never run last."""
    where = {t.job: t for t in plan.jobs}

    def key(j: int) -> tuple:
        t = where.get(jobs[j])
        if t is None or t.start_hours is None:
            return (1, 0.0, 0.0, j)
        return (0, t.start_hours, t.finish_hours if t.finish_hours is not None else 0.0, j)

    return tuple(sorted(range(len(jobs)), key=key))


def moves(n: int, steps: tuple[int, ...] = SEARCH_STEPS) -> list[tuple[int, int]]:
    """(from, to) insert moves over an order of n, each step's sweep in turn; d = 1 once per neighbour pair."""
    out = []
    for d in steps:
        for i in range(n):
            if i - d >= 0:
                out.append((i, i - d))
            if d > 1 and i + d < n:
                out.append((i, i + d))
    return out


def moved(order: tuple[int, ...], source: int, target: int) -> tuple[int, ...]:
    """The order with the job at place `source` taken out and put back at place `target`."""
    rest = list(order)
    job = rest.pop(source)
    rest.insert(target, job)
    return tuple(rest)


def local_search(
    order: tuple[int, ...],
    evaluate: Callable[[tuple[int, ...]], tuple[tuple, NightPlan]],
    *,
    evaluations: int = SEARCH_EVALUATIONS,
    steps: tuple[int, ...] = SEARCH_STEPS,
    stop: Callable[[], bool] | None = None,
) -> tuple[tuple, NightPlan, int]:
    """The best (key, timeline) found from `order` by first-improvement insert moves (lower key wins), and the
    timelines tried; at most `evaluations` of them, and none after `stop()` says so (the planning budget)."""
    best_key, best_plan = evaluate(order)
    tried = 1
    improved = True
    while improved and tried < evaluations:
        improved = False
        for source, target in moves(len(order), steps):
            if tried >= evaluations:
                break
            if stop is not None and stop():
                return best_key, best_plan, tried
            trial = moved(order, source, target)
            key, plan = evaluate(trial)
            tried += 1
            if key < best_key:
                order, best_key, best_plan, improved = trial, key, plan, True
    return best_key, best_plan, tried


def misses(plan: NightPlan) -> tuple[int, int, int]:
    """(hard deadlines missed, jobs never run, soft deadlines missed): what the deadline repair lowers."""
    s = plan.summary
    return len(s.hard_deadlines_missed), len(s.never_ran), len(s.soft_deadlines_missed)


def repair_deadlines(
    order: tuple[int, ...],
    evaluate: Callable[[tuple[int, ...]], tuple[tuple, NightPlan]],
    jobs: list[str],
    *,
    evaluations: int,
    admissible: Callable[[NightPlan], bool] = lambda plan: True,
    stop: Callable[[], bool] | None = None,
    steps: tuple[int, ...] = REPAIR_STEPS,
    hopeless: frozenset[str] = frozenset(),
    first: tuple[tuple, NightPlan] | None = None,
    after: Sequence[tuple[int, ...]] = (),
) -> tuple[tuple, NightPlan, int]:
    """The (key, timeline) with the fewest `misses` found from `order`, and the timelines tried. A move takes one
    job that missed its deadline (hard ones first; `jobs` the queue's ids), with the predecessors its start waited
    for (`held_by`, `after` each job's predecessors), to the place `in_time` guesses, then `d` places earlier for
    d in `steps`, then to the front; the first move that leaves an `admissible` timeline with fewer misses (or
    makes an inadmissible one admissible) is kept and the sweep starts again from its timeline. Jobs in
    `hopeless` (whose deadline no order can meet) are not moved. Unlike `local_search` a move that only shortens
    weighted completion is not kept: the repair spends its timelines on the deadlines. At most `evaluations`
    timelines (`first`, when given, is `order`'s, counted as one), none after `stop()` says so."""
    index = {job: j for j, job in enumerate(jobs)}
    best_key, best_plan = evaluate(order) if first is None else first
    tried = 1
    improved = True
    while improved and tried < evaluations:
        improved = False
        place = {j: k for k, j in enumerate(order)}
        where = {t.job: t for t in best_plan.jobs}
        s = best_plan.summary
        late = [job for job in (*s.hard_deadlines_missed, *s.soft_deadlines_missed) if job not in hopeless]
        for j in [index[job] for job in late]:
            # When its start waited for a predecessor, moving it alone changes nothing: the predecessor goes to the
            # place, the late job (and any job of the chain between them, `held_by`) right after it.
            chain = held_by(where, jobs, after, j)
            mover = chain[0]
            # The place from which it would start in time first, then each step that stays in the order, then
            # the front (the earliest the order can take it).
            aimed = in_time(order, where, jobs, mover, lateness(where[jobs[j]]))
            nearer = sorted(
                ({place[mover] - d for d in steps if d <= place[mover]} | {0}) - {aimed, place[mover]}, reverse=True
            )
            for target in ([] if aimed is None or aimed >= place[mover] else [aimed]) + nearer:
                if tried >= evaluations:
                    break
                if stop is not None and stop():
                    return best_key, best_plan, tried
                trial = moved_together(order, chain, target)
                key, plan = evaluate(trial)
                tried += 1
                if admissible(plan) and (misses(plan) < misses(best_plan) or not admissible(best_plan)):
                    order, best_key, best_plan, improved = trial, key, plan, True
                    break
            if improved or tried >= evaluations:
                break
    return best_key, best_plan, tried


def lateness(late: JobTimeline) -> float | None:
    """Hours a job finished after its deadline (None when it never finished or has none)."""
    if late.finish_hours is None or late.deadline_hours is None:
        return None
    return late.finish_hours - late.deadline_hours


def held_by(
    where: Mapping[str, JobTimeline], jobs: list[str], after: Sequence[tuple[int, ...]], j: int
) -> tuple[int, ...]:
    """The jobs whose places in the order decide job j's start, first the one that started on its own, last j: j
    alone, or, when j started as a predecessor (`after`) finished, that predecessor's and j (hardheavy-1 of
    bench/night_queues_other.py: h68, due at 1.5 h, waits for h26)."""
    chain = [j]
    while j < len(after):
        started = where[jobs[j]].start_hours if jobs[j] in where else None
        if started is None:
            break
        ends = {i: where[jobs[i]].finish_hours if jobs[i] in where else None for i in after[j] if i not in chain}
        waited = [i for i, end in ends.items() if end is not None and abs(end - started) <= 1e-6]
        if not waited:
            break
        j = waited[0]
        chain.append(j)
    return tuple(reversed(chain))


def moved_together(order: tuple[int, ...], chain: tuple[int, ...], target: int) -> tuple[int, ...]:
    """The order with the jobs of `chain` taken out and put back in a row, in the chain's order, where place
    `target` was (`moved` for a chain of one)."""
    members = set(chain)
    rest = [j for j in order if j not in members]
    before = sum(1 for j in order[:target] if j not in members)
    return (*rest[:before], *chain, *rest[before:])


def in_time(
    order: tuple[int, ...], where: Mapping[str, JobTimeline], jobs: list[str], j: int, early_by: float | None
) -> int | None:
    """The place in `order` from which job j would start `early_by` hours sooner, `where` the timeline's jobs by
    id: before the first job that started no earlier than j's start less `early_by` (a late job's lateness, or
    that of the job j holds up); None when j never ran or nothing is to gain. A guess (the jobs it passes shift
    too), tried before the fixed steps: with it the planner's night of lowpower-1 (bench/night_queues_other.py)
    misses no soft deadline, without it one; on hardheavy-1, small-6 and wide-1 it changed no miss."""
    moving = where.get(jobs[j])
    if moving is None or moving.start_hours is None or early_by is None:
        return None
    need = moving.start_hours - early_by
    for k, i in enumerate(order):
        started = where[jobs[i]].start_hours if jobs[i] in where else None
        if started is not None and started >= need - 1e-9:
            return k
    return None
