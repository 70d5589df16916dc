"""The solve loop: validate, build, solve with cut refinement, extract an exact plan (optsched.plan adds the
suggestions an infeasible plan carries; see optsched.explain.planning)."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from optsched.model.amdahl import speedup, tangent_point
from optsched.model.constraints import add_tangent_cut, needs_host
from optsched.model.data import ModelData
from optsched.model.expressions import budgets
from optsched.model.objectives import OBJECTIVES, TIE_BREAK_SHARE, ExtraObjective, Objective
from optsched.schema.plan import Plan, Status
from optsched.schema.tolerances import DEADLINE_RTOL, POWER_TOL_W
from optsched.schema.workload import Workload, workload_warnings
from optsched.solve.backends import Builder, build_model
from optsched.solve.bound import Lagrangian
from optsched.solve.columns import solve_by_columns
from optsched.solve.construct import construct, improve
from optsched.solve.decompose import option_count, solve_decomposed
from optsched.solve.diagnosis import diagnose_infeasible, precheck
from optsched.solve.extract import (
    aggregate,
    empty_plan,
    exact_speedups,
    extract,
    group_use,
    host_of,
    power,
    relative_gap,
    used_by_job,
    weighted,
)
from optsched.solve.heuristics import round_and_repair, round_must_run_first
from optsched.solve.highs import Outcome
from optsched.solve.options import OnIncumbent, Progress, SolveOptions

# A modelled speedup this far above the exact one gets a new tangent cut at the current point.
CUT_TOLERANCE = 1e-7
MAX_ROUNDS = 50
# Below the solver's feasibility tolerances (1e-7 per row, speeds summed over many rows) a gap means nothing:
# objectives this close count as equal, and a requested gap below MIN_GAP is treated as MIN_GAP.
ABS_GAP = 1e-6
MIN_GAP = 1e-6
# Share of the time limit the LP cut loop may use (after its first LP, which always runs).
RELAXATION_SHARE = 0.3
# Share of the time limit the first LP may take before the planner falls back to a greedy plan.
FIRST_LP_SHARE = 0.6
# Share of the remaining time the LP-neighbourhood sub-MIP may use before the full MILP gets the rest.
NEIGHBOURHOOD_SHARE = 0.25
# Above this many placement options, the workload is split into parts (optsched.solve.decompose): the measured
# crossover on 2 cores (bench/results/planner-large.md).
DIRECT_OPTIONS = 150_000
# Building the model takes about this long per placement option (measured: 0.93 s for L's 118,000 options
# unloaded, up to 5x that on the shared machine); it is skipped when the time left is under BUILD_TIME_FACTOR
# times the estimate.
BUILD_S_PER_OPTION = 1e-5
BUILD_TIME_FACTOR = 4.0
# Above DIRECT_OPTIONS, weighted_speedup goes to column generation (optsched.solve.columns); off, it goes to
# the parts (optsched.solve.decompose), as min_power always does. bench.large compares the two.
COLUMN_GENERATION = True
# Above this many options column generation does not converge within a minute on 2 cores (10,000 x 100: 22 rounds
# in 36 s, its plan 33,113 against the parts' 41,856; bench/results/planner-large.md): the parts take them.
COLUMN_MAX_OPTIONS = 2_000_000
# Worker processes that solve the parts.
PART_WORKERS = 2
# Share of the time left that the Lagrangian bound of a decomposed workload may take before the parts.
BOUND_SHARE = 0.2
# Rounds of parts at most, and the least time left worth another round.
MAX_PART_ROUNDS = 8
MIN_ROUND_S = 2.0
# The full MILP starts only with at least this many times the first LP's seconds left (see _refine).
MILP_START_FACTOR = 3.0
# on_incumbent gets a plan at most this often (more rarely when extracting one costs more than a quarter of it).
INCUMBENT_INTERVAL_S = 0.5
# Seconds per job an extraction is assumed to take before one has been timed (measured: about 0.1 ms at XL).
EXTRACT_S_PER_JOB = 2e-4

WorkloadSource = Workload | Mapping[str, Any] | str | Path


def solve_workload(
    source: WorkloadSource,
    options: SolveOptions = SolveOptions(),
) -> Plan:
    """Solve a workload (object, dict, JSON path or JSON text). Raises InvalidWorkload; never mutates the input.

    An infeasible result carries the diagnosis but no suggestions (those cost an elastic MILP: optsched.plan).

    `options` (optsched.solve.options.SolveOptions) says how: limits, backend, warm start, hooks.
    `warm_start` maps job id -> {(device id, cap_w): count}, e.g. a baseline's allocations.
    `progress(seconds, incumbent, bound)` is called whenever the best plan or the bound improves.
    `extra_objective` adds terms to the objective (optsched.replan's move cost): plans are then ranked, bounded and
    proven on the objective plus those terms, which `progress` reports, while the plan's `objective` stays the
    workload's own (its `bound` is clamped to it).
    `on_incumbent(plan)` receives each improved plan while solving, fully extracted, with status `time_limit` and
    the bound and gap known then; at most one every INCUMBENT_INTERVAL_S (longer when extracting costs more), and
    always the last one before the call returns. The first comes from the constructive heuristic
    (optsched.solve.construct), in seconds at any size.

    The time limit holds for the whole call: every phase gets what is left, HiGHS is stopped at the deadline (and
    abandoned if it ignores the interrupt), and the best plan found so far comes back with status `time_limit`.
    """
    started = time.monotonic()
    workload = Workload.load(source)
    validated = time.monotonic()
    time_limit = workload.options.time_limit_s if options.time_limit_s is None else options.time_limit_s
    gap = workload.options.mip_gap if options.mip_gap is None else options.mip_gap
    threads, backend = options.threads, options.backend
    extra_functionality, extra_objective = options.extra_functionality, options.extra_objective
    data = ModelData(workload)
    warnings = tuple(workload_warnings(workload))

    reasons = precheck(data)
    if reasons:
        return _infeasible(data, reasons, warnings, started, 0)
    objective = OBJECTIVES[workload.objective]
    if not data.arrays.eligible.any():
        # Nothing can run anywhere and precheck found no must-run job: the empty plan is the only plan.
        empty = _Search(best={}, rounds=0, proven=True)
        empty.best_value = empty.bound = objective.value(0.0, power(data, {}))
        return extract(data, objective, {}, Status.optimal, empty.bound, warnings, started, rounds=0)

    deadline = started + time_limit
    search = _Search(
        started=started, progress=options.progress, extra=extra_objective, on_incumbent=options.on_incumbent, data=data,
        objective=objective, warnings=warnings,
    )
    timings = {"validate": validated - started}
    if extra_functionality is None:
        # A first plan before any model exists (rows added by extra_functionality are invisible to heuristics).
        _consider(search, data, objective, construct(data))
        timings["first_plan"] = time.monotonic() - validated
    # The final extraction needs time too: keep what the first one took (or an estimate) in reserve.
    solve_deadline = deadline - min(0.1 * time_limit, max(search.extract_seconds, EXTRACT_S_PER_JOB * len(data.jobs)))
    built = handed_off = time.monotonic()
    b = None
    n_options = option_count(data)
    large = _decomposable(data, search, backend, extra_functionality, extra_objective)
    if large and COLUMN_GENERATION and objective.name == "weighted_speedup" and n_options <= COLUMN_MAX_OPTIONS:
        # Too large for one MILP in time: column generation over whole job allocations, whose master has a row
        # per job, group and budget whatever the number of options (optsched.solve.columns).
        stats = solve_by_columns(
            data, best=lambda: (search.best, search.best_value), deadline=solve_deadline, gap=gap, threads=threads,
            consider=lambda counts: _consider(search, data, objective, counts),
            on_bound=lambda bound: _improve_bound(search, bound, True),
        )
        search.proven = _within_gap(search, gap)
        timings.update({"bound": stats.pricing_s, "columns": stats.mip_s, "column_rounds": stats.rounds})
    elif large:
        # min_power (or columns switched off): parts solved in parallel and merged (optsched.solve.decompose),
        # with a Lagrangian bound for weighted_speedup (optsched.solve.bound).
        dual = Lagrangian(data) if objective.name == "weighted_speedup" else None
        if dual is not None:
            dual.run(time.monotonic() + BOUND_SHARE * (solve_deadline - time.monotonic()), target=search.best_value)
            _improve_bound(search, dual.best, True)
            _consider(search, data, objective, improve(data, search.best, dual.prices()))
        timings["bound"] = time.monotonic() - built
        # Rounds of parts while they leave time: each round splits the best plan anew (different parts), so that
        # jobs and watts move between what were different parts.
        for round_ in range(MAX_PART_ROUNDS):
            before = search.best_value
            timings["parts"] = solve_decomposed(
                data, search.best, solve_workload, deadline=solve_deadline, mip_gap=gap, workers=PART_WORKERS, round_=round_,
                consider=lambda counts: _consider(search, data, objective, counts),
            )
            timings["rounds"] = round_ + 1
            if search.best_value == before or solve_deadline - time.monotonic() < MIN_ROUND_S:
                break
        if dual is not None and time.monotonic() < solve_deadline:
            dual.run(solve_deadline, target=search.best_value)
            _improve_bound(search, dual.best, True)
    elif search.best is not None and extra_functionality is None and (
        solve_deadline - time.monotonic() < BUILD_TIME_FACTOR * BUILD_S_PER_OPTION * n_options
    ):
        # Too little time to build the one model (the parts above never build it): the first plan, re-placed
        # along the Lagrangian prices, with the Lagrangian bound (or the trivial one) for its gap.
        dual = Lagrangian(data) if objective.name == "weighted_speedup" and extra_objective is None else None
        if dual is not None:
            dual.run(time.monotonic() + 0.5 * (solve_deadline - time.monotonic()), target=search.best_value)
            _improve_bound(search, dual.best, True)
            if time.monotonic() < solve_deadline:
                _consider(search, data, objective, improve(data, search.best, dual.prices()))
        timings["bound"] = time.monotonic() - built
    elif time.monotonic() < solve_deadline:
        b = build_model(data, backend=backend, extra_functionality=extra_functionality, extra_objective=extra_objective)
        built = time.monotonic()
        b.prepare()
        handed_off = time.monotonic()
        start = _counts_from_allocations(data, options.warm_start) if options.warm_start else None
        _refine(search, b, data, objective, gap, solve_deadline, threads, start, extra_rows=extra_functionality is not None)
    solved = time.monotonic()
    timings.update({
        "build": built - validated - timings.get("first_plan", 0.0),
        "handoff": handed_off - built,
        "solve": solved - handed_off,
        "highs": b.solve_seconds if b is not None else 0.0,
    })
    if search.bound is None and search.best is not None:
        _improve_bound(search, _trivial_bound(data, objective), objective.sense == "max")

    if search.infeasible:
        return _infeasible(data, diagnose_infeasible(data), warnings, started, search.rounds)
    if search.best is None:
        empty = empty_plan(data, Status.no_solution, (), warnings, started, search.rounds)
        return empty.model_copy(update={"timings": timings, "bound": search.bound})
    status = Status.optimal if search.proven else Status.time_limit
    plan = extract(data, objective, search.best, status, search.bound, warnings, started, search.rounds)
    timings["extract"] = time.monotonic() - solved
    plan = plan.model_copy(update={"timings": timings, "solve_seconds": time.monotonic() - started})
    if search.on_incumbent is not None and search.best is not search.published:
        # Always the last: the final plan itself, with the interim status (it costs no second extraction).
        search.published = search.best
        search.on_incumbent(plan.model_copy(update={"status": Status.time_limit}))
    return plan




def _infeasible(data: ModelData, reasons, warnings, started: float, rounds: int) -> Plan:
    plan = empty_plan(data, Status.infeasible, tuple(reasons), warnings, started, rounds)
    return plan.model_copy(update={"solve_seconds": time.monotonic() - started})


@dataclass
class _Search:
    started: float = 0.0
    progress: Progress | None = None
    best: dict[tuple[int, int, int], int] | None = None
    best_value: float | None = None
    bound: float | None = None
    rounds: int = 0
    infeasible: bool = False
    proven: bool = False
    extra: ExtraObjective | None = None  # terms added to the objective; plans are ranked with them
    on_incumbent: OnIncumbent | None = None
    data: ModelData | None = None
    objective: Objective | None = None
    warnings: tuple[str, ...] = ()
    published: dict | None = None  # the counts last handed to on_incumbent
    published_at: float = -math.inf
    extract_seconds: float = 0.0  # what the last extraction of a plan took


def _refine(
    search: _Search,
    b: Builder,
    data: ModelData,
    objective: Objective,
    gap: float,
    deadline: float,
    threads,
    start,
    extra_rows: bool = False,
) -> _Search:
    """Outer approximation: tighten the tangent cuts on the LP relaxation, then solve the MILP, compare modelled
    and exact speedups at its solution, add cuts where they differ, and solve again until they agree."""
    maximise = objective.sense == "max"
    # Rows added by extra_functionality are invisible to the heuristics: their plans then only seed HiGHS,
    # which checks every row, and are never accepted as they are.
    trusted = not extra_rows
    # The empty plan is feasible whenever no job must run (precheck already compared idle draw with budgets):
    # with it, a solver that reports "infeasible" by mistake can never turn a feasible workload infeasible.
    seeds = [{}] + ([start] if start is not None else [])
    lp_timing: dict[str, float] = {}
    relaxation = tighten_relaxation(b, data, deadline, threads, timing=lp_timing)
    if relaxation is not None and relaxation.values is not None:
        _improve_bound(search, primary_bound(b, data, objective, relaxation.bound), maximise)
        fractional = b.values(relaxation, "n", (o.key for o in data.options))
        plain = round_and_repair(data, fractional)
        seeds.append(plain)
        if not _feasible(data, plain):
            # The plain rounding can leave must-run jobs without devices when the LP gives them all away (racks).
            seeds.append(round_must_run_first(data, fractional))
    else:
        # No LP in time (very large workloads): the constructive plan stands, with the bound no plan can pass.
        _improve_bound(search, _trivial_bound(data, objective), maximise)
    if trusted:
        for counts in seeds:
            _consider(search, data, objective, counts)
        lp_seconds = lp_timing.get("first_lp", math.inf)
        if relaxation is not None and relaxation.values is not None and not _within_gap(search, gap) and (
            deadline - time.monotonic() >= lp_seconds
        ):
            _consider(search, data, objective, _solve_neighbourhood(b, data, fractional, search, gap, deadline, threads))
    if search.best is not None and _within_gap(search, gap):
        # A plan within the gap of the LP bound: proven without branching on the whole model.
        search.proven = True
        return search
    if search.best is not None and deadline - time.monotonic() < MILP_START_FACTOR * lp_timing.get("first_lp", math.inf):
        # HiGHS sets up a large MILP (clique table, probing) without looking at its time limit or interrupts,
        # for several times its first LP: a MILP that cannot finish that setup would only overrun the limit.
        return search
    seed = search.best if trusted else next((c for c in reversed(seeds) if _feasible(data, c)), None)
    warm = _warm_start(b, data, seed) if seed is not None else None
    while search.rounds < MAX_ROUNDS:
        search.rounds += 1
        result = b.solve(
            wall_deadline=deadline, mip_gap=gap, threads=threads, warm_start=warm,
            on_poll=lambda value, x, bound: _poll(search, b, data, objective, x, bound),
        )
        if result.abandoned:
            # HiGHS still runs on its own thread; the last incumbent its callbacks saw is all there is.
            if result.values is not None:
                _consider(search, data, objective, _counts_of(b, data, result.values))
            return search
        if result.outcome == Outcome.infeasible:
            search.infeasible = search.best is None
            return search
        if result.outcome in (Outcome.error, Outcome.limit_without_solution):
            return search
        counts = _counts_of(b, data, result.values)
        exact = exact_speedups(data, counts)
        _consider(search, data, objective, counts)
        _improve_bound(search, primary_bound(b, data, objective, result.bound), maximise)
        if result.outcome == Outcome.optimal and _within_gap(search, gap):
            search.proven = True
            return search
        if result.outcome != Outcome.optimal or time.monotonic() >= deadline:
            return search
        modelled = b.values(result, "S", range(len(data.jobs)))
        if not _add_cuts(b, data, counts, exact, modelled):
            # The model is exact at its optimum: its bound stands and nothing is left to refine.
            search.proven = True
            return search
        warm = _warm_start(b, data, search.best)
    return search


def _decomposable(data: ModelData, search: _Search, backend: str, extra_functionality, extra_objective) -> bool:
    """Only plain workloads with a first plan to split by; and only above DIRECT_OPTIONS placement options."""
    if search.best is None or extra_functionality is not None or extra_objective is not None or backend != "highs":
        return False
    return option_count(data) > DIRECT_OPTIONS


def _counts_of(b: Builder, data: ModelData, values) -> dict[tuple[int, int, int], int]:
    return {o.key: int(round(values[b.column("n", o.key)])) for o in data.options}


def _poll(search: _Search, b: Builder, data: ModelData, objective: Objective, values, bound) -> None:
    """While HiGHS runs: keep its newest incumbent if it is a better plan, and publish what is due."""
    if values is not None:
        _consider(search, data, objective, _counts_of(b, data, values))
    _publish(search)


def _publish(search: _Search, final: bool = False) -> None:
    """Hand the best plan to on_incumbent if it changed: at most once per interval, and always when `final`
    (solve_workload hands over the last one itself, as the final plan with the interim status)."""
    if search.on_incumbent is None or search.best is None or search.best is search.published:
        return
    now = time.monotonic()
    interval = max(INCUMBENT_INTERVAL_S, 4 * search.extract_seconds)
    if not final and now - search.published_at < interval:
        return
    plan = extract(
        search.data, search.objective, search.best, Status.time_limit, search.bound, search.warnings, search.started,
        search.rounds,
    )
    search.extract_seconds = time.monotonic() - now
    search.published, search.published_at = search.best, now
    search.on_incumbent(plan)


def _trivial_bound(data: ModelData, objective: Objective) -> float | None:
    """Every job at its best speedup, ignoring capacity and power (max); the idle draw (min)."""
    if objective.sense == "max":
        return sum(job.objective_weight * data.best_speedup(j) for j, job in enumerate(data.jobs))
    return data.idle_power_w


def _consider(search: _Search, data: ModelData, objective: Objective, counts) -> None:
    """Keep `counts` as the incumbent if it is a feasible plan better than the one we have."""
    if counts is None or not _feasible(data, counts):
        return
    value = objective.value(weighted(data, exact_speedups(data, counts)), power(data, counts))
    if search.extra is not None:
        value += search.extra.value(data, counts)
    if search.best_value is None or (value > search.best_value if objective.sense == "max" else value < search.best_value):
        search.best, search.best_value = counts, value
        _report(search)
        _publish(search)


def _improve_bound(search: _Search, bound: float | None, maximise: bool) -> None:
    tighter = _tighter(search.bound, bound, maximise)
    if tighter != search.bound:
        search.bound = tighter
        _report(search)


def _report(search: _Search) -> None:
    if search.progress is not None:
        search.progress(time.monotonic() - search.started, search.best_value, search.bound)


def _solve_neighbourhood(b: Builder, data: ModelData, fractional, search: _Search, gap, deadline, threads):
    """RENS: the MILP with each n limited to [0, ceil(LP value)]: a small sub-MIP whose plans stay near the LP."""
    budget = min(deadline, time.monotonic() + max(1.0, NEIGHBOURHOOD_SHARE * (deadline - time.monotonic())))
    box = {("n", o.key): (0.0, float(math.ceil(fractional[o.key] - 1e-6))) for o in data.options}
    warm = _warm_start(b, data, search.best) if search.best is not None else None
    result = b.solve_within(
        box, wall_deadline=budget, mip_gap=gap / 2, threads=threads, warm_start=warm, presolve=True
    )
    if result.values is None:
        return None
    return {k: int(round(v)) for k, v in b.values(result, "n", (o.key for o in data.options)).items()}


def tighten_relaxation(
    b: Builder, data: ModelData, deadline: float, threads, max_passes: int = 8, timing: dict | None = None
):
    """Kelley's cutting planes on the LP relaxation: add the tangent at each job's LP point until S is exact there.
    Returns the last LP result (its bound is valid for the MILP), or None when the LP found nothing; `timing`
    receives "first_lp", the seconds of the first LP when it finished."""
    result = None
    # Refining the relaxation may use a share of the time, and even the first LP must leave time for a
    # fallback plan when it cannot finish (very large workloads).
    remaining = max(0.0, deadline - time.monotonic())
    stop = time.monotonic() + RELAXATION_SHARE * remaining
    first_lp_deadline = time.monotonic() + FIRST_LP_SHARE * remaining
    for _ in range(max_passes):
        if result is not None and time.monotonic() >= stop:
            return result
        lp_deadline = deadline if result is not None else first_lp_deadline
        latest = b.solve(wall_deadline=lp_deadline, mip_gap=0.0, threads=threads, relax=True)
        if latest.outcome != Outcome.optimal:
            return result
        if result is None and timing is not None:
            timing["first_lp"] = latest.seconds
        result = latest
        x = result.values
        added = 0
        for j, job in enumerate(data.jobs):
            p = job.parallel_fraction
            if not 0.0 < p < 1.0:
                continue
            s_host, r, s = (x[b.column(v, j)] for v in ("s_host", "R", "S"))
            if s_host <= 1e-9 or r <= 1e-9:
                continue
            if s > speedup(p, s_host, r) * (1 + CUT_TOLERANCE) + CUT_TOLERANCE:
                added += add_tangent_cut(b, data, j, tangent_point(p, s_host, r))
        if not added:
            return result
    # Cuts were added after the last LP: its bound is still valid, only looser.
    return result


def _feasible(data: ModelData, counts) -> bool:
    """A heuristic allocation that satisfies every must-run job and every budget (capacity holds by construction)."""
    if any(n < 0 for n in counts.values()):
        return False
    used, drawn = group_use(data, counts)
    if any(used[g] > group.count for g, group in enumerate(data.groups)):
        return False
    for domain, limit in budgets(data):
        total = sum(
            drawn[g] + (group.count - used[g]) * group.idle_w
            for g, group in enumerate(data.groups) if domain is None or group.domain == domain
        )
        if total > limit + POWER_TOL_W:
            return False
    by_job = used_by_job(data, counts)
    placed = {j for j, u in enumerate(by_job) if u}
    return all(satisfied(data, j, by_job[j]) for j in placed) and all(j in placed for j in data.must_run)


def satisfied(data: ModelData, j: int, used) -> bool:
    """Admitted with min..max devices and, with a deadline, meeting it (as the verifier recomputes it)."""
    job = data.jobs[j]
    n = sum(m for _, m in used)
    if n < job.min_devices or n > data.max_devices(j):
        return False
    if job.deadline_hours is None:
        return True
    s = speedup(job.parallel_fraction, max(o.speed for o, _ in used), sum(o.speed * m for o, m in used))
    return s > 0 and job.work_hours / s <= job.deadline_hours * (1 + DEADLINE_RTOL)


def _add_cuts(b: Builder, data: ModelData, counts, exact: list[float], modelled) -> int:
    added = 0
    by_job = used_by_job(data, counts)
    for j, job in enumerate(data.jobs):
        if modelled[j] <= exact[j] * (1 + CUT_TOLERANCE) + CUT_TOLERANCE:
            continue
        s_host, r = aggregate(by_job[j])
        if 0.0 < job.parallel_fraction < 1.0 and s_host > 0:
            added += add_tangent_cut(b, data, j, tangent_point(job.parallel_fraction, s_host, r))
    return added


def _warm_start(b: Builder, data: ModelData, counts) -> dict:
    """A plan with its exact speedups satisfies every cut (they touch S from above), so it is a valid start."""
    warm: dict = {("n", k): float(counts.get(k, 0)) for k in (o.key for o in data.options)}
    by_job = used_by_job(data, counts)
    exact = exact_speedups(data, counts, by_job)
    for j in range(len(data.jobs)):
        s_host, r = aggregate(by_job[j])
        host = host_of(by_job[j])
        warm[("a", j)] = float(host is not None)
        warm[("S", j)] = exact[j]
        warm[("R", j)] = r
        warm[("s_host", j)] = s_host if needs_host(data, j) else 0.0
        for o in data.host_options(j):
            warm[("h", o.key)] = float(host is not None and o.key == host.key)
    return warm


def _counts_from_allocations(data: ModelData, allocations) -> dict[tuple[int, int, int], int]:
    """{job id: {(device id, cap_w): count}} to model keys; entries the model cannot express are dropped."""
    job_index = {job.id: j for j, job in enumerate(data.jobs)}
    key_of = {(o.job, data.groups[o.group].id, o.cap_w): o.key for o in data.options}
    counts: dict[tuple[int, int, int], int] = {}
    for job_id, per_device in allocations.items():
        for (device, cap_w), n in per_device.items():
            key = key_of.get((job_index.get(job_id), device, float(cap_w)))
            if key is not None and n > 0:
                counts[key] = counts.get(key, 0) + int(n)
    return counts


def _within_gap(search: _Search, gap: float) -> bool:
    # The tie-break term may widen the bound by TIE_BREAK_SHARE of the gap (see objectives.py).
    if search.best_value is None or search.bound is None:
        return False
    if abs(search.bound - search.best_value) <= ABS_GAP:
        return True
    return relative_gap(search.best_value, search.bound) <= max(gap, MIN_GAP) * (1 + TIE_BREAK_SHARE)


def _tighter(old: float | None, new: float | None, maximise: bool) -> float | None:
    if new is None:
        return old
    if old is None:
        return new
    return min(old, new) if maximise else max(old, new)


def primary_bound(b: Builder, data: ModelData, objective: Objective, model_bound: float | None) -> float | None:
    """The solver bounds primary - eps * power (max) or power - eps * speedup (min); turn that into a bound on the
    primary objective alone: + eps * peak power for max; the min bound is already valid (eps * speedup >= 0)."""
    if model_bound is None or not math.isfinite(model_bound):
        return None
    if objective.sense == "max":
        return model_bound + b.tie_break_weight * data.peak_power_w
    return model_bound
