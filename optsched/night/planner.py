"""`plan_night`: several candidate policies through the same engine, and the best timeline among them.

The candidates (every one deterministic, every timeline checked by the same rules):

* `milp`: event-driven re-planning with the core MILP (optsched.night.milp.MilpPolicy): completion-aware starts,
  weighted-shortest-remaining-time weights, effective deadlines and aging, slack against later windows,
  elastic growth of running jobs; for queues of at most MILP_MAX_JOBS jobs;
* `milp-soft`: the same with a soft deadline still within reach raising its job's weight (1 + SOFT_MISS_HOURS /
  its slack), so that an event's MILP does not trade it away; for the same queues, when they have one; on queues
  of MILP_MAX_JOBS..MID_MILP_MAX_JOBS jobs the one MILP candidate (`milp` without soft deadlines), each event's
  MILP to a relative gap of at least MID_MILP_GAP;
* `milp-classic`: the same MILP with the slowdown guard, plain priority weights and no growth (the planner
  before issue 13); for queues of at most CLASSIC_MAX_JOBS jobs;
* `dispatch-priority`, `-deadline`, `-wspt`, `-hybrid`, `-hybrid-soft`: completion-aware dispatch with
  reservations, backfilling and elastic growth (optsched.night.dispatch.DispatchPolicy) in five job orders
  (`hybrid-soft`: `hybrid` with soft deadlines close at hand taken before Smith's rule);
* `dispatch-hybrid-soft-tight`: `dispatch-hybrid-soft` with soft deadlines taken first only within
  TIGHT_SOFT_SLACK_HOURS of slack; for queues of more than EFFICIENT_MAX_JOBS jobs (no MILP candidate, no search);
* `dispatch-efficient`: dispatch in priority order that starts a job whenever it fits (EASY's rule) on at most
  as many devices as keep its Amdahl efficiency >= 1/2; for queues of at most EFFICIENT_MAX_JOBS jobs;
* `dispatch-edf`, `dispatch-edf-efficient`: dispatch by effective deadline that starts a job whenever it fits, on
  as many devices as it may use or as keep its efficiency >= 1/2; for the same queues;
* `dispatch-edf-mixed`, `dispatch-edf-mixed-efficient`: the same with soft and hard deadlines in one order, the
  earliest first whatever its kind (the EDF list scheduler's order); for the same queues;
* `list-deadline`, `list-edf-mixed`: greedy list scheduling (optsched.baselines.night.ListPolicy: each job in turn on
  as many of the fastest free devices as fit the budgets at top caps) in the dispatch's orders over effective
  deadlines; for queues of at most EFFICIENT_MAX_JOBS jobs;
* `fifo`, `edf`, `easy`, `conservative`: the list schedulers of optsched.baselines.night, on queues of at most
  REFERENCE_MAX_JOBS jobs when no `candidates` are named: candidates, and the reference of the final choice;
* `dispatch-share`: under a fairness objective, dispatch in priority order on at most each job's fair share of
  the free devices (optsched.night.dispatch.fair_shares: water-filling on the progress by morning, equal shares
  after it); running jobs grow into what is left free.

After them, on queues of at most SLOTTED_MAX_JOBS jobs, `milp-slotted` (optsched.night.slotted): the whole night
decided at once by a non-preemptive time-indexed MILP (one start per job at a slot edge, on one device type), its
schedule carried out by the engine, as it is (`milp-slotted`) and with the devices of jobs not yet ready held for
them (`milp-slotted-reserved`). Then, on queues of SEARCH_MIN_JOBS..SEARCH_MAX_JOBS jobs, `dispatch-search`
(optsched.night.improve): the dispatch in a fixed job order, improved by local search from the best candidate's
start order; its timeline is kept only if it beats every candidate. Last, on queues of REPAIR_MIN_JOBS..
REPAIR_MAX_JOBS jobs whose best timeline so far misses a deadline, `dispatch-repair`
(optsched.night.improve.repair_deadlines): from the dispatch candidates with the fewest misses, jobs that missed
their deadline moved earlier in a fixed order while the night misses fewer, its makespan and energy within
REFERENCE_SLACK of the least found or of its starting candidate's; ranked like any other timeline. Then, on the same
queues, where no timeline with the fewest hard misses and jobs never run meets the reference (`meets_reference`),
`dispatch-reference`: local search over the order of the dispatch candidate nearest it, lowering
optsched.night.improve.shortfall.

All of it runs within a planning budget (`budget_s`, by default NIGHT_BUDGET_S up to EFFICIENT_MAX_JOBS jobs and
LARGE_NIGHT_BUDGET_S beyond): the dispatch candidates and the list schedulers first, the MILP candidates after
them, then `milp-slotted`, the search, the repair and the reference search, and the bound last, in the
BOUND_BUDGET_SHARE of the budget they leave it; a timeline the budget ends is dropped at its next event, and
`NightPlan.budget_cut` names what it stopped or left unrun. Each keeps its place in the candidates' order for the
ties, so a budget that does not bind changes nothing.

The timeline kept is the best by (hard deadlines missed, jobs never run, weighted mean completion priced with its
soft misses, soft deadlines missed, makespan, energy), the candidates' order breaking ties: a soft deadline missed
counts as its job finishing SOFT_MISS_HOURS later, so a candidate does not win by trading soft deadlines away for a
little weighted completion; energy is the secondary objective, deciding between timelines of equal service. Then
`choose` keeps, among the timelines tied with the best on hard misses and jobs never run, those that meet the
reference (no more soft misses and no larger weighted mean completion than the best list scheduler, makespan and
energy within REFERENCE_SLACK of theirs) when any does, and among those lets a timeline with fewer soft misses
take the best one's place if its weighted mean completion x (1 + SOFT_MISS_SHARE x soft misses) is lower: light
jobs' misses, priced by their weight, are otherwise given away for very little. `NightPlan.chosen` names it. Under a
fairness objective (max_min_speedup, team_max_min) the queue's fairness by morning ranks right after the jobs
never run (after the largest rho under night_fairness finish_time): the night picks the fairest candidate, and
the `milp` candidate's events weigh the jobs by the service they have attained (optsched.night.fairness).
"""

from __future__ import annotations

import functools
import logging
import math
import time
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from optsched.baselines.night import ListPolicy, reference_policies
from optsched.night.bound import BOUND_TIME_LIMIT_S, night_bound, with_gaps
from optsched.night.dispatch import ORDERS, DispatchPolicy
from optsched.night.engine import Decision, OnFailure, Policy, ProgressCallback, View, simulate
from optsched.night.fairness import night_fairness
from optsched.night.fleet import Fleet
from optsched.night.improve import (
    SEARCH_MAX_JOBS,
    SEARCH_MIN_JOBS,
    local_search,
    misses,
    ranks,
    reference_evaluations,
    repair_deadlines,
    repair_evaluations,
    search_evaluations,
    shortfall,
    start_order,
)
from optsched.night.milp import (
    NIGHT_MIP_GAP,
    NIGHT_TIME_LIMIT_S,
    SOFT_MISS_HOURS,
    MilpPolicy,
    night_warnings,
    time_limit_within,
    validate_night,
)
from optsched.night.slotted import SLOTTED_TIME_LIMIT_S, SlottedPolicy, solve_slotted
from optsched.schema.errors import FieldError, InvalidWorkload
from optsched.schema.night import NightPlan, NightQueue
from optsched.schema.workload import FAIR_OBJECTIVES, PRIORITY_WEIGHT, Priority, Workload

logger = logging.getLogger(__name__)

# Queues with more jobs are planned without the MILP candidates: an event's MILP costs 0.1-1 s there, and a
# 120-job night must plan in 20 s on 2 cores (bench/results/night.md).
MILP_MAX_JOBS = 100
CLASSIC_MAX_JOBS = 100
# Above MILP_MAX_JOBS and up to MID_MILP_MAX_JOBS, one MILP candidate (`milp-soft`, or `milp` without soft
# deadlines) at a relative gap of at least MID_MILP_GAP per event, within what the budget leaves it.
MID_MILP_MAX_JOBS = 150
MID_MILP_GAP = 0.1
EFFICIENT_MAX_JOBS = 150
DISPATCH_ORDERS = ("priority", "deadline", "wspt", "hybrid", "hybrid-soft")
# The dispatch orders greedy list scheduling also runs in (`list-deadline`, `list-edf-mixed`).
LIST_ORDERS = ("deadline", "edf-mixed")
CANDIDATE_NAMES = (
    "milp",
    "milp-soft",
    "milp-classic",
    *(f"dispatch-{order}" for order in DISPATCH_ORDERS),
    "dispatch-efficient",
    "dispatch-edf",
    "dispatch-edf-efficient",
    "dispatch-edf-mixed",
    "dispatch-edf-mixed-efficient",
    "dispatch-edf-mixed-aware",
    "dispatch-edf-mixed-efficient-aware",
    "dispatch-edf-mixed-patient",
    "dispatch-edf-mixed-efficient-patient",
    "dispatch-share",
    "dispatch-hybrid-soft-tight",
    *(f"list-{order}" for order in LIST_ORDERS),
)
# On queues of at most REFERENCE_MAX_JOBS jobs the four list schedulers of optsched.baselines.night (FIFO, EDF, EASY
# and conservative backfilling) run beside the candidates, as candidates and as the reference of `choose`: on the
# 500-job bench queues conservative backfilling alone takes 7-10 s (the others 1.4-2.5 s), on 120 jobs 0.2-1.1 s
# (bench/results/night-baselines.md).
REFERENCE_MAX_JOBS = EFFICIENT_MAX_JOBS
# A timeline meets the reference when it misses no more soft deadlines and has no larger weighted mean completion
# than the best of the reference timelines, and its makespan and energy are within this share of their least.
REFERENCE_SLACK = 0.05
# In `choose`, a soft miss costs this share of the weighted mean completion (whatever its job's weight).
SOFT_MISS_SHARE = 0.01
# The planning budget by default (seconds of candidates, slotted MILP, search and the bound): the night's
# timelines cost 0.1-25 s each on 100 jobs, and a 120-job night plans in 20 s, a 500-job one in 2 min.
NIGHT_BUDGET_S = 20.0
LARGE_NIGHT_BUDGET_S = 120.0
MAX_BUDGET_S = 86_400.0
# The share of the budget kept for the bound (at most its time limit): the 120-job bench nights' LP took 0.7-1.0 s
# on 2 cores (optsched.night.bound's longer slots), 2 s of a 20-s budget.
BOUND_BUDGET_SHARE = 0.1
# The improvement phase after the candidates (optsched.night.improve): asked for by this name in `candidates`.
SEARCH_NAME = "dispatch-search"
# Then, where the best timeline so far misses a deadline, `dispatch-repair` (optsched.night.improve.repair_deadlines)
# from the dispatch candidates with the fewest misses (`repair_seeds`), each under the start rule that replays its
# start order better, `repair_evaluations` timelines in all.
REPAIR_NAME = "dispatch-repair"
REPAIR_MIN_JOBS = SEARCH_MIN_JOBS
REPAIR_MAX_JOBS = EFFICIENT_MAX_JOBS
# Last, on the same queues, where no timeline with the fewest hard misses and jobs never run meets the reference
# (`meets_reference`), `dispatch-reference`: local search over the order of the dispatch candidate closest to it
# (optsched.night.improve.shortfall), lowering how many of the reference's measures the night misses and by how much,
# `reference_evaluations` timelines. failures-0 of bench/night_queues_third.py: from 2 soft misses (EDF 1) and a
# makespan 1.19 x the least, to a night that meets the reference.
REFERENCE_NAME = "dispatch-reference"
# The slotted candidate (optsched.night.slotted), on queues of at most SLOTTED_MAX_JOBS jobs: its MILP's horizon is
# SLOTTED_HORIZON x the shortest makespan among the candidates that ran every job.
SLOTTED_NAME = "milp-slotted"
SLOTTED_MAX_JOBS = 30
SLOTTED_HORIZON = 1.2
# Where its MILP finds no schedule by that horizon (and says so well within its time limit), the horizon doubled, at
# most this many times: the candidates that ran every job may all have missed a critical deadline to end early.
SLOTTED_RETRIES = 2
# The slotted schedule is carried out twice: as `milp-slotted`, a job starts as soon as it fits, and as
# `milp-slotted-reserved`, jobs not yet ready hold their slot's devices and draw against the jobs after them
# (optsched.night.slotted.SlottedPolicy, reserve).
SLOTTED_RESERVED_NAME = "milp-slotted-reserved"
# Its MILP prices a soft miss at this many hours of its job's weight, above the ranking's SOFT_MISS_HOURS: the
# engine starts jobs earlier than their slots, so the schedule's misses are what is left to keep. short-301 of
# bench/night_queues.py at 10 s: priced at 1 h, 1.329 h with 4 soft misses (the best baseline misses 3); at 3 h,
# 1.393 h with 2; at 10 h, 1.509 h with 2.
SLOTTED_SOFT_MISS_HOURS = 3.0
# What `candidates` may name: the candidate policies and the phases after them.
ASKABLE_NAMES = (*CANDIDATE_NAMES, SLOTTED_NAME, SLOTTED_RESERVED_NAME, SEARCH_NAME, REPAIR_NAME, REFERENCE_NAME)


def plan_night(
    queue: NightQueue | Workload | Mapping[str, Any] | str | Path,
    *,
    start: datetime | str,
    hours: float,
    preempt: bool = False,
    restart_hours: float = 0.1,
    on_failure: OnFailure = "replan",
    time_limit_s: float | None = None,
    mip_gap: float | None = None,
    candidates: tuple[str, ...] | None = None,
    progress: ProgressCallback | None = None,
    bound_time_limit_s: float = BOUND_TIME_LIMIT_S,
    budget_s: float | None = None,
) -> NightPlan:
    """Plan the night's queue as a timeline (deterministic unless `budget_s` binds). Raises InvalidWorkload; never
    fails for one job.

    `queue` is a NightQueue (a plain Workload is read as one), a dict, a JSON path or JSON text; `start` a
    datetime or ISO 8601 text; `hours` the night's length. `restart_hours` is the restart cost of jobs whose
    queue sets none; `on_failure` "replan" plans a job a device failure stops again at once, "wait" lets it
    wait for the repair (the static reference). `time_limit_s` and `mip_gap` apply to each event's MILP; by
    default the queue's options when it sets them, else NIGHT_TIME_LIMIT_S and NIGHT_MIP_GAP; a solve that
    stops at its time limit makes the result depend on the machine's speed (summary.decisions_at_time_limit).
    `candidates` restricts the candidate policies by name (default: all that the queue's size allows).
    `bound_time_limit_s` bounds the time spent on summary.bound, the chosen timeline's gap to the time-indexed
    lower bound (optsched.night.bound; 0: not computed, the field stays null), within what is left of the budget;
    stopped or above its size limit it is skipped with the reason. `budget_s` bounds the planning, the bound
    included (default `night_budget_s` of the queue's size): the list schedulers and dispatch candidates run first,
    the MILP candidates, the slotted MILP, the search and the repair after them until BOUND_BUDGET_SHARE of it is
    left, and what the budget stops or leaves unrun is named in `budget_cut`; the first timeline always runs whole.
    A budget that binds makes the result depend on the machine's speed.
    """
    workload, begin = validate_night(
        queue, start=start, hours=hours, restart_hours=restart_hours, time_limit_s=time_limit_s, mip_gap=mip_gap
    )
    if on_failure not in ("replan", "wait"):
        raise InvalidWorkload([FieldError("on_failure", f"must be 'replan' or 'wait', not {on_failure!r}")])
    if not (isinstance(bound_time_limit_s, int | float) and 0 <= bound_time_limit_s <= 3_600):
        raise InvalidWorkload([FieldError("bound_time_limit_s", "must be a number of seconds in [0, 3600]")])
    if budget_s is not None and not (
        isinstance(budget_s, int | float) and not isinstance(budget_s, bool) and 0 < budget_s <= MAX_BUDGET_S
    ):
        raise InvalidWorkload([FieldError("budget_s", f"must be seconds in (0, {MAX_BUDGET_S:.0f}]")])
    budget = night_budget_s(len(workload.jobs)) if budget_s is None else float(budget_s)
    ends = time.monotonic() + budget
    # The bound runs within the budget: what comes before it stops BOUND_BUDGET_SHARE early (at most its limit).
    reserve = min(bound_time_limit_s, BOUND_BUDGET_SHARE * budget)
    deadline = ends - reserve
    given = workload.options.model_fields_set if "options" in workload.model_fields_set else set()
    if time_limit_s is None:
        time_limit_s = workload.options.time_limit_s if "time_limit_s" in given else NIGHT_TIME_LIMIT_S
    if mip_gap is None:
        mip_gap = workload.options.mip_gap if "mip_gap" in given else NIGHT_MIP_GAP
    policies = candidate_policies(workload, hours=hours, time_limit_s=time_limit_s, mip_gap=mip_gap, deadline=deadline)
    if candidates is not None:
        unknown = sorted(set(candidates) - set(ASKABLE_NAMES))
        if unknown or not candidates:
            message = f"unknown candidate policies {unknown}; choose from {list(ASKABLE_NAMES)}" if unknown else (
                "name at least one"
            )
            raise InvalidWorkload([FieldError("candidates", message)])
        policies = [
            p
            for p in candidate_policies(
                workload, hours=hours, time_limit_s=time_limit_s, mip_gap=mip_gap, every=True, deadline=deadline
            )
            if p.name in candidates
        ]
    warnings = night_warnings(workload)

    def night(policy: Policy, report: ProgressCallback | None = progress) -> NightPlan:
        return simulate(
            workload,
            policy,
            start=begin,
            hours=hours,
            preempt=preempt,
            restart_hours=restart_hours,
            on_failure=on_failure,
            progress=report,
            warnings=warnings,
        )

    ids = [job.id for job in workload.jobs]
    timelines: list[tuple[tuple, NightPlan]] = []
    cut: list[str] = []  # what the budget stopped or left unrun

    def within_budget(policy: Policy) -> NightPlan | None:
        """The policy's timeline, None when the budget ends first (the first timeline always runs whole)."""
        if not timelines:
            return night(policy)
        try:
            return night(_Budgeted(policy, deadline))
        except BudgetSpent:
            cut.append(policy.name)
            return None

    def spent_before(name: str) -> bool:
        """The budget is spent before `name` starts (noted in budget_cut); never before the first timeline. The
        search asks before each timeline it tries and stops at the first yes, keeping its best so far."""
        if timelines and time.monotonic() >= deadline:
            cut.append(name)
            return True
        return False

    # The reference search needs the reference: naming it runs the list schedulers too.
    referenced = (candidates is None or REFERENCE_NAME in candidates) and len(workload.jobs) <= REFERENCE_MAX_JOBS
    runs = [*policies, *(reference_policies() if referenced else [])]
    # The MILP candidates last (0.1-25 s each on 100 jobs, the others 0.1-0.6 s), `milp-soft` first among them (the
    # night kept it on 4 of 10 100-job queues, bench/results/night-budget.md); each keeps its place k in the ties.
    for k in sorted(range(len(runs)), key=lambda k: (isinstance(runs[k], MilpPolicy), runs[k].name != "milp-soft", k)):
        began = time.monotonic()
        plan = within_budget(runs[k])
        if plan is None:
            continue
        key = (*score(plan, workload), k)
        logger.debug("night candidate %s: %s in %.2f s", runs[k].name, key, time.monotonic() - began)
        timelines.append((key, plan))
    # The list schedulers come after the candidates in `runs`: their timelines are the reference.
    reference = [plan for key, plan in timelines if key[-1] >= len(policies)]

    def best_start_order() -> tuple[int, ...] | None:
        """The start order of the best timeline so far (None before the first)."""
        if not timelines:
            return None
        return start_order(min(timelines, key=lambda t: t[0])[1], ids)

    def ranked(
        name: str, index: int, order: tuple[int, ...], sizing: str = "most", aware: bool = True,
        urgent_waits: bool = False,
    ) -> tuple[tuple, NightPlan]:
        """The dispatch's timeline in a fixed job order (the search's and the repair's), with its key."""
        trial = DispatchPolicy(
            name, order="ranked", rank=ranks(order), sizing=sizing, completion_aware=aware, urgent_waits=urgent_waits
        )
        plan = night(trial, None)
        return (*score(plan, workload), index), plan

    def asked(name: str, by_size: bool) -> bool:
        """Whether the phase `name` runs: by the queue's size, or, with `candidates` named, when it is one of them."""
        return by_size if candidates is None else name in candidates

    slotted = [n for n in (SLOTTED_NAME, SLOTTED_RESERVED_NAME) if asked(n, len(workload.jobs) <= SLOTTED_MAX_JOBS)]
    # Without a candidate that ran every job (`candidates` asked for this one alone), the night's length.
    finished = [p.summary.makespan_hours for _, p in timelines if not p.summary.never_ran] or [hours]
    if slotted and not spent_before(slotted[0]):
        horizon = SLOTTED_HORIZON * min(finished)
        for retry in range(SLOTTED_RETRIES + 1):
            # HiGHS starts from the slotted schedule of the best candidate's start order.
            limit = time_limit_within(SLOTTED_TIME_LIMIT_S, deadline)
            schedule = solve_slotted(
                workload,
                horizon_hours=horizon,
                time_limit_s=limit,
                restart_hours=restart_hours,
                order=best_start_order(),
                soft_miss_hours=SLOTTED_SOFT_MISS_HOURS,
            )
            logger.debug("night slotted: %s, %s", schedule.outcome.value, schedule.reason or schedule.objective)
            # No schedule ends by the horizon, found well within the limit: the shortest candidates may have kept
            # it short by missing a hard deadline (a night that waits for a critical job's release runs longer).
            if schedule.starts or schedule.seconds >= limit / 2 or retry == SLOTTED_RETRIES or spent_before(
                slotted[0]
            ):
                break
            horizon *= 2.0
        # The reserving one after every other timeline in the ties (the phases below take len(runs) + 1..3).
        for name, index in ((SLOTTED_NAME, len(runs)), (SLOTTED_RESERVED_NAME, len(runs) + 4)):
            if name in slotted and schedule.starts:
                plan = within_budget(SlottedPolicy(schedule, name, reserve=name == SLOTTED_RESERVED_NAME))
                if plan is not None:
                    timelines.append(((*score(plan, workload), index), plan))
    search = asked(SEARCH_NAME, SEARCH_MIN_JOBS <= len(workload.jobs) <= SEARCH_MAX_JOBS)
    if search and not spent_before(SEARCH_NAME):
        seed = best_start_order() or tuple(range(len(ids)))
        evaluate = functools.partial(ranked, SEARCH_NAME, len(runs) + 1)
        key, plan, tried = local_search(seed, evaluate, evaluations=search_evaluations(len(ids)),
                                     stop=lambda: spent_before(SEARCH_NAME))
        logger.debug("night search: %s after %d timelines", key, tried)
        timelines.append((key, plan))
    # The queue's fleet, as the repair and the reference search read it (predecessors, static orders).
    fleet = Fleet(workload)
    repair = asked(REPAIR_NAME, REPAIR_MIN_JOBS <= len(workload.jobs) <= REPAIR_MAX_JOBS)
    if repair and timelines and any(misses(min(timelines, key=lambda t: t[0])[1])) and not spent_before(REPAIR_NAME):
        seeds = repair_seeds(timelines, runs)
        # A night that keeps its deadlines by running much longer, or on much more energy, than the best found is
        # not one a user would take (hardheavy-1 of bench/night_queues_other.py: 55.3 h against 34.7 h): within 5 %
        # of the least found, or of its starting candidate's.
        slack = 1.0 + REFERENCE_SLACK
        longest = slack * min(p.summary.makespan_hours for _, p in timelines)
        costliest = slack * min(p.summary.energy_kwh for _, p in timelines)
        left = repair_evaluations(len(ids))
        hopeless = hopeless_deadlines(workload, fleet)
        after = fleet.predecessors
        for n, (policy, seed_plan) in enumerate(seeds):
            if n and spent_before(REPAIR_NAME):
                break

            def admissible(plan: NightPlan, seed: NightPlan = seed_plan) -> bool:
                return plan.summary.makespan_hours <= max(longest, slack * seed.summary.makespan_hours) + 1e-9 and (
                    plan.summary.energy_kwh <= max(costliest, slack * seed.summary.energy_kwh) + 1e-9
                )

            replay = functools.partial(
                ranked, REPAIR_NAME, len(runs) + 2, sizing=policy.sizing, urgent_waits=policy.urgent_waits
            )
            # The start order replayed under each start rule (a job waits for faster devices, or starts whenever
            # it fits), and the seed's own order under its own rule where that order is static (its replay is the
            # seed's night; a start order is not: the EDF orders' replays of tight-1 and gangs-0 of
            # bench/night_queues_third.py missed 2-4 deadlines more); the repair goes on from the best. From
            # dispatch-hybrid-soft's order, hardheavy-1 keeps its makespan only under the first rule (34.7 against
            # 55.3 h); wide-1's night is 5.30 h with the repair under the second, 5.67 h under the first alone.
            static = policy.static_order(fleet)
            started = start_order(seed_plan, ids)
            starts = [(started, aware) for aware in (True, False)]
            tries = ([(static, policy.completion_aware)] if static is not None else []) + starts
            # Each replay is a whole timeline: none starts once the budget is spent (but the seed's first).
            replays: list[tuple[tuple[int, ...], bool, tuple[tuple, NightPlan]]] = []
            for order, aware in tries:
                if replays and spent_before(REPAIR_NAME):
                    break
                replays.append((order, aware, replay(order, aware=aware)))
            seed_order, aware, first = min(
                replays, key=lambda r: (not admissible(r[2][1]), misses(r[2][1]), r[2][0])
            )
            key, plan, tried = repair_deadlines(
                seed_order,
                functools.partial(replay, aware=aware),
                ids,
                # An equal share each, and what the first leaves to the second; the other replays count too.
                evaluations=max(1, left // (len(seeds) - n) - len(replays) + 1),
                admissible=admissible,
                stop=lambda: spent_before(REPAIR_NAME),
                hopeless=hopeless,
                first=first,
                after=after,
            )
            tried += len(replays) - 1
            left -= tried
            logger.debug("night repair from %s: %s after %d timelines", policy.name, misses(plan), tried)
            if admissible(plan):
                timelines.append((key, plan))
    reach = asked(REFERENCE_NAME, REPAIR_MIN_JOBS <= len(workload.jobs) <= REPAIR_MAX_JOBS)
    nearest = reference_seed(timelines, runs, reference) if reach and reference else None
    if nearest is not None and not spent_before(REFERENCE_NAME):
        policy, seed_plan, head = nearest
        replay = functools.partial(
            ranked, REFERENCE_NAME, len(runs) + 3, sizing=policy.sizing, aware=policy.completion_aware,
            urgent_waits=policy.urgent_waits,
        )

        def closer(order: tuple[int, ...]) -> tuple[tuple, NightPlan]:
            """Never more hard misses or jobs never run than the best night; then nearer the reference."""
            key, plan = replay(order)
            return (key[:-5] > head, *shortfall(plan, reference, REFERENCE_SLACK), key), plan

        static = policy.static_order(fleet)
        key, plan, tried = local_search(
            static if static is not None else start_order(seed_plan, ids),
            closer,
            evaluations=reference_evaluations(len(ids)),
            stop=lambda: spent_before(REFERENCE_NAME),
        )
        logger.debug("night reference search from %s: %s after %d timelines", policy.name, key[:3], tried)
        timelines.append((key[-1], plan))
    if not timelines:
        # Only the slotted candidates were asked for and their model found no schedule (too large, or none ends by its
        # horizon): the night is still planned, by the first dispatch, and `chosen` says so.
        fallback = DispatchPolicy(f"dispatch-{DISPATCH_ORDERS[0]}", order=DISPATCH_ORDERS[0])
        plan = night(fallback)
        timelines.append(((*score(plan, workload), 0), plan))
    chosen = choose(timelines, reference)
    summary = chosen.summary.model_copy(update={"policy": "planner"})
    if bound_time_limit_s > 0:
        # What is left of the budget, and half the reserve where a timeline ran past its deadline.
        limit = min(bound_time_limit_s, max(reserve / 2, ends - time.monotonic()))
        bound = night_bound(workload, hours=hours, horizon_hours=summary.makespan_hours, time_limit_s=limit, mip=False)
        summary = summary.model_copy(update={"bound": with_gaps(bound, summary)})
    if cut:
        logger.info("night %s: the planning budget stopped or left unrun %s", workload.name, ", ".join(cut))
    return chosen.model_copy(
        update={"policy": "planner", "chosen": chosen.policy, "summary": summary, "budget_cut": tuple(cut)}
    )


def repair_seeds(timelines: list[tuple[tuple, NightPlan]], runs: list) -> list[tuple[DispatchPolicy, NightPlan]]:
    """The dispatch candidates the deadline repair starts from: the one with the fewest `misses` (hard first), and
    the one with the fewest deadlines missed in all (hard and soft together) when it is another; each its best
    key first. lowpower-1 of bench/night_queues_other.py: the first misses 0 hard and 10 soft deadlines, the second
    (dispatch-edf) 1 and 1, and the repair from it ends at 0 and 0."""
    ran = [(key, plan, runs[key[-1]]) for key, plan in timelines if key[-1] < len(runs)]
    ran = [(key, plan, policy) for key, plan, policy in ran if isinstance(policy, DispatchPolicy)]
    if not ran:
        return []
    fewest = min(ran, key=lambda r: (misses(r[1]), r[0]))
    fewest_in_all = min(ran, key=lambda r: (misses(r[1])[0] + misses(r[1])[2], misses(r[1]), r[0]))
    picked = [fewest] if fewest_in_all is fewest else [fewest, fewest_in_all]
    return [(policy, plan) for _, plan, policy in picked]


def tied_with_best(timelines: list[tuple[tuple, NightPlan]]) -> list[tuple[tuple, NightPlan]]:
    """The timelines whose key ties the best one's on what ranks before the priced weighted completion (hard
    misses, jobs never run, fairness): key = (*score, candidate), that head all but its last 5 entries."""
    head = min(key for key, _ in timelines)[:-5]
    return [(key, plan) for key, plan in timelines if key[:-5] == head]


def reference_seed(
    timelines: list[tuple[tuple, NightPlan]], runs: list, reference: list[NightPlan]
) -> tuple[DispatchPolicy, NightPlan, tuple] | None:
    """Where the reference search starts: None when a timeline that ties the best on what ranks before weighted
    completion (hard misses, jobs never run, fairness: the key's head, `choose`) meets the reference, else the
    dispatch candidate among them with the least `shortfall`, its timeline and that key head (None when none is a
    dispatch candidate)."""
    if not timelines:
        return None
    tied = tied_with_best(timelines)
    head = tied[0][0][:-5]
    if any(meets_reference(plan, reference) for _, plan in tied):
        return None
    ran = [(key, plan, runs[key[-1]]) for key, plan in tied if key[-1] < len(runs)]
    ran = [(key, plan, policy) for key, plan, policy in ran if isinstance(policy, DispatchPolicy)]
    if not ran:
        return None
    _, plan, policy = min(ran, key=lambda r: (shortfall(r[1], reference, REFERENCE_SLACK), r[0]))
    return policy, plan, head


def hopeless_deadlines(queue: NightQueue, fleet: Fleet | None = None) -> frozenset[str]:
    """The jobs that would miss their deadline even alone on the fleet from their release, after their predecessors
    (`after`) did the same (earliest finish e_j = max(release_j, max over predecessors e_i) + work_j / best
    speedup_j > deadline_j): moving them earlier spends the repair's timelines for nothing (hardheavy-1 of
    bench/night_queues_other.py: h19, 54 h of work on one device, due 8.3 h after its release)."""
    earliest = (fleet or Fleet(queue)).earliest_finishes  # `fleet`: the queue's, when the caller has one
    return frozenset(
        job.id
        for j, job in enumerate(queue.jobs)
        if job.deadline_hours is not None and earliest[j] > job.deadline_hours + 1e-9
    )


def night_budget_s(jobs: int) -> float:
    """The planning budget by default for a queue of this many jobs (seconds)."""
    return NIGHT_BUDGET_S if jobs <= EFFICIENT_MAX_JOBS else LARGE_NIGHT_BUDGET_S


class BudgetSpent(Exception):
    """The planning budget ended during a candidate's timeline: the planner drops it."""


class _Budgeted:
    """A policy whose timeline stops (BudgetSpent) at its first event after `deadline` (time.monotonic())."""

    def __init__(self, policy: Policy, deadline: float) -> None:
        self.policy, self.deadline, self.name = policy, deadline, policy.name

    def decide(self, view: View) -> Decision:
        if time.monotonic() >= self.deadline:
            raise BudgetSpent(self.name)
        return self.policy.decide(view)


def choose(timelines: list[tuple[tuple, NightPlan]], reference: list[NightPlan] | None = None) -> NightPlan:
    """The best timeline by its key (`score`, then the candidates' order), among those that tie the best on what
    ranks before weighted completion (hard deadlines missed, jobs never run, fairness) and meet the `reference`
    (`meets_reference`) when any does; unless one of them that misses fewer soft deadlines has a lower weighted
    mean completion x (1 + SOFT_MISS_SHARE x its soft misses): the price of `score` (SOFT_MISS_HOURS x the job's
    weight) undercounts misses of light jobs, which many of them together make visible (medium-101 of
    bench/night_queues.py). Why the reference: a night that misses more soft deadlines than EDF, or runs longer
    or on more energy than backfilling, is one a user would not take from a planner, however good its weighted
    completion; where no timeline with the fewest hard misses meets it, those that miss fewest of its four
    measures (`shortfall`) are ranked: failures-1 of bench/night_queues_third.py, 5 soft misses (EDF 2) and
    0.99 x the least energy, not 6 and 1.18 x for a 25 % lower weighted completion."""
    if not timelines:
        raise ValueError("no timeline to choose from")
    tied = tied_with_best(timelines)
    if reference:
        # Those that miss fewest of the reference's four measures: none where one meets it.
        missed = [shortfall(p, reference, REFERENCE_SLACK)[0] for _, p in tied]
        fewest = min(missed)
        tied = [t for t, m in zip(tied, missed, strict=True) if m == fewest]
    key, plan = min(tied, key=lambda t: t[0])

    def relative(p: NightPlan) -> float:
        wmct = p.summary.weighted_mean_completion_hours
        missed = len(p.summary.soft_deadlines_missed)
        return math.inf if wmct is None else round(wmct * (1.0 + SOFT_MISS_SHARE * missed), 9)

    soft = len(plan.summary.soft_deadlines_missed)
    peers = [(relative(p), k, p) for k, p in tied if len(p.summary.soft_deadlines_missed) <= soft]
    return min(peers, key=lambda t: t[:2])[2]


def meets_reference(plan: NightPlan, reference: list[NightPlan]) -> bool:
    """No more soft deadlines missed and no larger weighted mean completion than the best reference timeline's,
    makespan and energy within REFERENCE_SLACK of the least of theirs (each measure's best may be another's)."""
    if plan.summary.weighted_mean_completion_hours is None or not reference:
        return False
    return shortfall(plan, reference, REFERENCE_SLACK)[0] == 0


def score(plan: NightPlan, queue: NightQueue | None = None) -> tuple:
    """(hard deadlines missed, jobs never run, priced weighted mean completion, soft misses, makespan, energy): lower
    wins. Priced: sum w_j (finish_j + SOFT_MISS_HOURS [j missed its soft deadline]) / sum w_j over finished jobs.
    Under a fairness objective of `queue` its value over the night (optsched.night.fairness.night_fairness, higher
    is fairer) comes before the weighted mean completion, and the largest finish-time rho after it (before it
    when the queue's night_fairness is finish_time)."""
    s = plan.summary
    wmct = priced_completion(plan)
    fair: tuple = ()
    if queue is not None and queue.objective in FAIR_OBJECTIVES:
        rho = math.inf if s.max_rho is None else round(s.max_rho, 9)
        # The summary holds the value under the plan's own queue; a queue given apart is scored afresh.
        value = s.fairness if s.fairness is not None else night_fairness(queue, plan.jobs, plan.hours)
        fair = (-round(value, 9), rho)
        if queue.night_fairness == "finish_time":
            fair = fair[::-1]
    return (
        len(s.hard_deadlines_missed),
        len(s.never_ran),
        *fair,
        math.inf if wmct is None else round(wmct, 9),
        len(s.soft_deadlines_missed),
        round(s.makespan_hours, 9),
        round(s.energy_kwh, 9),
    )


def priced_completion(plan: NightPlan) -> float | None:
    """Weighted mean completion with SOFT_MISS_HOURS added to each job that missed its soft deadline (hours; None
    when nothing finished)."""
    s = plan.summary
    if s.weighted_mean_completion_hours is None:
        return None
    missed = set(s.soft_deadlines_missed)
    weights = {j.job: PRIORITY_WEIGHT[Priority(j.priority)] * j.weight for j in plan.jobs if j.finish_hours is not None}
    total = sum(weights.values())
    late = sum(w for j, w in weights.items() if j in missed)
    return s.weighted_mean_completion_hours + SOFT_MISS_HOURS * late / total


def candidate_policies(
    queue: NightQueue,
    *,
    hours: float,
    time_limit_s: float,
    mip_gap: float,
    every: bool = False,
    deadline: float | None = None,
) -> list[Policy]:
    """The candidate policies for this queue and a night of `hours` (by its size; `every`: all of them); the MILP
    candidates' event solves end by `deadline` (time.monotonic(); None: their time limit alone)."""
    n = len(queue.jobs)
    out: list[Policy] = []
    # Under a fairness objective each event's MILP weighs the jobs by the service they have attained.
    weighting = queue.night_fairness if queue.objective in FAIR_OBJECTIVES else "wsrpt"
    # `milp-soft` prices soft deadlines on top of the weighted-shortest-remaining-time weights.
    soft = weighting == "wsrpt" and any(job.deadline_hours is not None and not job.is_hard for job in queue.jobs)

    def milp(name: str, weights: str, gap: float, **rules: bool) -> MilpPolicy:
        return MilpPolicy(
            time_limit_s=time_limit_s, mip_gap=gap, weighting=weights, name=name, deadline=deadline, **rules
        )

    if every or n <= MILP_MAX_JOBS:
        out.append(milp("milp", weighting, mip_gap))
        if every or soft:
            # A second MILP pricing soft deadlines: alone it gained soft misses on some bench queues and lost them
            # on others (docs/changelog.md, 2026-12-04); as a candidate the ranking keeps the better timeline.
            out.append(milp("milp-soft", "wsrpt-soft", mip_gap))
    elif n <= MID_MILP_MAX_JOBS:
        # One MILP candidate on the mid-size nights, each event's MILP to a looser gap: alone, on the 28 bench
        # nights of 120 jobs, it took 4.5-66 s at 1 % and ended jobs sooner than the best list scheduler on all 28
        # (weighted completion 0.17-0.97 x); on gangs-0 of bench/night_queues_third.py it missed 4-7 soft
        # deadlines (EDF 8; the dispatch candidates 3-34 with 1-6 hard misses, or 21+ with none) in 15.5 s at
        # 1 %, 10.8 s at 5 % and 9.2 s at 10 %: the 7-12 s a 20-s budget leaves after the other candidates.
        gap = max(mip_gap, MID_MILP_GAP)
        out.append(milp("milp-soft", "wsrpt-soft", gap) if soft else milp("milp", weighting, gap))
    if every or n <= CLASSIC_MAX_JOBS:
        out.append(milp("milp-classic", "priority", mip_gap, completion_aware=False, elastic=False))
    out += [DispatchPolicy(f"dispatch-{order}", order=order) for order in DISPATCH_ORDERS]
    if every or n <= EFFICIENT_MAX_JOBS:
        out.append(DispatchPolicy("dispatch-efficient", order="priority", sizing="efficient", completion_aware=False))
        # Earliest effective deadline first, each job starting whenever it fits: on 8 night queues of 120 jobs from
        # a second generator (bench/night_queues_other.py) the plan missed more soft deadlines than the best list
        # scheduler on 5 (5-11 against 1-3); each of these two alone met every criterion of issue 28 on 6 of the 8.
        out.append(DispatchPolicy("dispatch-edf", order="deadline", completion_aware=False))
        out.append(
            DispatchPolicy("dispatch-edf-efficient", order="deadline", sizing="efficient", completion_aware=False)
        )
        # The same with soft and hard deadlines in one order, as the EDF list scheduler has them: on the third
        # generator's queues (bench/night_queues_third.py) the EDF list scheduler missed 1-8 soft deadlines where
        # every candidate before these missed 4-26 (tight-1: 2 against 8-25).
        out.append(DispatchPolicy("dispatch-edf-mixed", order="edf-mixed", completion_aware=False))
        out.append(DispatchPolicy("dispatch-edf-mixed-efficient", order="edf-mixed", sizing="efficient",
                                  completion_aware=False))
        out.append(DispatchPolicy("dispatch-edf-mixed-aware", order="edf-mixed"))
        out.append(DispatchPolicy("dispatch-edf-mixed-efficient-aware", order="edf-mixed", sizing="efficient"))
        out.append(DispatchPolicy("dispatch-edf-mixed-patient", order="edf-mixed", completion_aware=False,
                                  urgent_waits=True))
        out.append(DispatchPolicy("dispatch-edf-mixed-efficient-patient", order="edf-mixed", sizing="efficient",
                                  completion_aware=False, urgent_waits=True))
        # Greedy list scheduling (the list schedulers' rule: each job in turn on as many of the fastest free devices
        # as fit the budgets at top caps; no reservation, no growth) in the dispatch's orders over effective
        # deadlines: failures-1 of bench/night_queues_third.py, in the EDF-mixed order, misses no hard and 2 soft
        # deadlines (as EDF) at 0.91 x the best list scheduler's weighted completion, where every dispatch candidate
        # with no hard miss missed 5 or more soft ones or used 1.17 x the least energy. 0.1-0.2 s each on 120 jobs.
        out += [ListPolicy(f"list-{order}", ORDERS[order]) for order in LIST_ORDERS]
    if every or n > EFFICIENT_MAX_JOBS:
        # The large nights have neither MILP candidates nor the search: a second soft order, with a shorter reach.
        out.append(DispatchPolicy("dispatch-hybrid-soft-tight", order="hybrid-soft-tight"))
    if every or queue.objective in FAIR_OBJECTIVES:
        # Every other candidate gives a starting job all the devices it can use, which under a fairness objective
        # leaves the jobs behind it with nothing by morning (two 2 h jobs on 2 devices, a 1 h night: fairness 0
        # where side by side gives 0.5).
        out.append(DispatchPolicy("dispatch-share", order="priority", sizing="share", horizon=hours))
    return out
