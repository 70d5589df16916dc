"""One MILP for the whole workload, refined by outer approximation: tangent cuts on the LP relaxation, an
LP-neighbourhood sub-MIP (RENS), then the MILP solved again while its modelled speedups exceed the exact ones."""

from __future__ import annotations

import math
import time
from collections.abc import Hashable, Mapping

import numpy as np

from optsched.model.amdahl import speedup, tangent_point
from optsched.model.constraints import add_tangent_cut, needs_host
from optsched.model.data import ModelData
from optsched.model.objectives import Objective
from optsched.solve.backends import Builder, ColumnBounds, SolverBackend, build_model
from optsched.solve.budget import TimeBudget
from optsched.solve.extract import Counts, aggregate, exact_speedups, host_of, used_by_job
from optsched.solve.heuristics import round_and_repair, round_must_run_first
from optsched.solve.highs import Outcome, SolveRequest, SolveResult
from optsched.solve.incumbent import IncumbentTracker, feasible, trivial_bound
from optsched.solve.options import WarmStart
from optsched.solve.strategies.base import Report, Strategy

# A modelled speedup this far above the exact one gets a new tangent cut at the current point.
CUT_TOLERANCE = 1e-7
MAX_ROUNDS = 50
# Share of the time limit the LP cut loop may use (after its first LP, which always runs).
RELAXATION_SHARE = 0.3
# Share of the time limit the first LP may take before the planner falls back to a greedy plan.
FIRST_LP_SHARE = 0.6
# Share of the remaining time the LP-neighbourhood sub-MIP may use before the full MILP gets the rest.
NEIGHBOURHOOD_SHARE = 0.25
# The full MILP starts only with at least this many times the first LP's seconds left (see refine).
MILP_START_FACTOR = 3.0

WarmValues = dict[tuple[str, Hashable], float]


class DirectMilp(Strategy):
    """The whole MILP on the options' backend, with the caller's extra rows and terms."""

    name = "direct"

    def solve(self, data: ModelData, objective: Objective, budget: TimeBudget, tracker: IncumbentTracker) -> Report:
        if budget.expired():
            return Report()
        options = self.options
        started = time.monotonic()
        b = build_model(
            data, backend=options.backend, extra_functionality=options.extra_functionality,
            extra_objective=options.extra_objective,
        )
        built = time.monotonic()
        b.prepare()
        handed_off = time.monotonic()
        start = counts_from_allocations(data, options.warm_start) if options.warm_start else None
        extra_rows = options.extra_functionality is not None
        refine(tracker, b, data, objective, budget, options.threads, start, extra_rows=extra_rows)
        return Report(build_s=built - started, handoff_s=handed_off - built, highs_s=b.solve_seconds)


def refine(
    tracker: IncumbentTracker,
    b: Builder,
    data: ModelData,
    objective: Objective,
    budget: TimeBudget,
    threads: int | None,
    start: Counts | None,
    extra_rows: bool = False,
) -> None:
    """Outer approximation: tighten the tangent cuts on the LP relaxation, then solve the MILP, compare modelled
    and exact speedups at its solution, add cuts where they differ, and solve again until they agree."""
    gap = tracker.gap
    # Rows added by extra_functionality are invisible to the heuristics: their plans then only seed HiGHS,
    # which checks every row, and are never accepted as they are.
    trusted = not extra_rows
    # The empty plan is feasible whenever no job must run (precheck already compared idle draw with budgets):
    # with it, a solver that reports "infeasible" by mistake can never turn a feasible workload infeasible.
    seeds: list[Counts] = [{}] + ([start] if start is not None else [])
    lp_timing: dict[str, float] = {}
    relaxation = tighten_relaxation(b, data, budget.deadline, threads, timing=lp_timing)
    fractional: dict[tuple[int, int, int], float] = {}
    relaxed = relaxation is not None and relaxation.values is not None
    if relaxation is not None and relaxed:
        tracker.improve_bound(primary_bound(b, data, objective, relaxation.bound))
        fractional = _option_values(b, relaxation, data)
        plain = round_and_repair(data, fractional)
        seeds.append(plain)
        if not feasible(data, plain):
            # The plain rounding can leave must-run jobs without devices when the LP gives them all away (racks).
            seeds.append(round_must_run_first(data, fractional))
    else:
        # No LP in time (very large workloads): the constructive plan stands, with the bound no plan can pass.
        tracker.improve_bound(trivial_bound(data, objective))
    if trusted:
        for counts in seeds:
            tracker.consider(counts)
        lp_seconds = lp_timing.get("first_lp", math.inf)
        if relaxed and not tracker.within_gap() and budget.remaining() >= lp_seconds:
            tracker.consider(_solve_neighbourhood(b, data, fractional, tracker, budget, threads))
    if tracker.best is not None and tracker.within_gap():
        # A plan within the gap of the LP bound: proven without branching on the whole model.
        tracker.proven = True
        return
    if tracker.best is not None and budget.remaining() < MILP_START_FACTOR * lp_timing.get("first_lp", math.inf):
        # HiGHS sets up a large MILP (clique table, probing) without looking at its time limit or interrupts,
        # for several times its first LP: a MILP that cannot finish that setup would only overrun the limit.
        return
    seed = tracker.best if trusted else next((c for c in reversed(seeds) if feasible(data, c)), None)
    warm = _warm_start(data, seed) if seed is not None else None
    while tracker.rounds < MAX_ROUNDS:
        tracker.rounds += 1

        def poll(_objective: float | None, values: np.ndarray | None, _bound: float | None) -> None:
            """While HiGHS runs: keep its newest incumbent if it is a better plan, and publish what is due."""
            if values is not None:
                tracker.consider(_counts_of(b, data, values))
            tracker.publish()

        result = b.solve(SolveRequest(budget.deadline, gap, threads=threads, warm_start=warm, on_poll=poll))
        if result.abandoned:
            # HiGHS still runs on its own thread; the last incumbent its callbacks saw is all there is.
            if result.values is not None:
                tracker.consider(_counts_of(b, data, result.values))
            return
        if result.outcome == Outcome.infeasible:
            tracker.infeasible = tracker.best is None
            return
        if result.outcome in (Outcome.error, Outcome.limit_without_solution) or result.values is None:
            return
        counts = _counts_of(b, data, result.values)
        exact = exact_speedups(data, counts)
        tracker.consider(counts)
        tracker.improve_bound(primary_bound(b, data, objective, result.bound))
        if result.outcome == Outcome.optimal and tracker.within_gap():
            tracker.proven = True
            return
        if result.outcome != Outcome.optimal or budget.expired():
            return
        modelled = b.values(result, "S", range(len(data.jobs)))
        if not _add_cuts(b, data, counts, exact, modelled):
            # The model is exact at its optimum: its bound stands and nothing is left to refine.
            tracker.proven = True
            return
        warm = _warm_start(data, tracker.best) if tracker.best is not None else None


def tighten_relaxation(
    b: Builder, data: ModelData, deadline: float, threads: int | None, max_passes: int = 8,
    timing: dict[str, float] | None = None,
) -> SolveResult | None:
    """Kelley's cutting planes on the LP relaxation: add the tangent at each job's LP point until S is exact there.
    Returns the last LP result (its bound is valid for the MILP), or None when the LP found nothing; `timing`
    receives "first_lp", the seconds of the first LP when it finished."""
    result = None
    # Refining the relaxation may use a share of the time, and even the first LP must leave time for a
    # fallback plan when it cannot finish (very large workloads).
    budget = TimeBudget(deadline)
    cut_loop = budget.share(RELAXATION_SHARE)
    first_lp = budget.share(FIRST_LP_SHARE)
    for _ in range(max_passes):
        if result is not None and cut_loop.expired():
            return result
        lp_deadline = deadline if result is not None else first_lp.deadline
        latest = b.solve(SolveRequest(lp_deadline, 0.0, threads=threads, relax=True))
        if latest.outcome != Outcome.optimal or latest.values is None:
            return result
        if result is None and timing is not None:
            timing["first_lp"] = latest.seconds
        result = latest
        x = latest.values
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


def primary_bound(b: Builder, data: ModelData, objective: Objective, model_bound: float | None) -> float | None:
    """The solver bounds primary - eps * power (max) or power - eps * speedup (min); turn that into a bound on the
    primary objective alone: + eps * peak power for max; the min bound is already valid (eps * speedup >= 0)."""
    if model_bound is None or not math.isfinite(model_bound):
        return None
    if objective.sense == "max":
        slack = b.tie_break_weight * data.peak_power_w
        if _nothing_beats_the_empty_plan(b, data, model_bound, slack):
            return 0.0
        return model_bound + slack
    return model_bound


def _nothing_beats_the_empty_plan(b: Builder, data: ModelData, model_bound: float, slack: float) -> bool:
    """Weighted speedup without must-run jobs or other terms, where every plan that admits a job is worth more to
    the solver than its bound: job j on any of its options is worth w_j S_j >= w_j x its slowest device's speed
    (S grows with every device), less eps x at most the peak draw. The optimum then admits nothing, and its value,
    0, is the bound. Why: on a workload where nothing fits, the bound + eps x peak power was reported as a gap of
    1,200 (1.2e-6 against 0) under status optimal."""
    if data.workload.objective != "weighted_speedup" or b.extra_objective or data.must_run:
        return False
    o = data.option_arrays
    if not len(o.speed):
        return True
    # Each job's slowest device over its options (jobs without one stay at inf), from the arrays: a Python loop
    # over every option would run at each pass of the MILP.
    slowest = np.full(len(data.jobs), np.inf)
    np.minimum.at(slowest, o.job, o.speed)
    return float(np.min(data.arrays.weight * slowest)) - slack > model_bound + 1e-9


def counts_from_allocations(data: ModelData, allocations: WarmStart) -> Counts:
    """{job id: {(device id, cap_w): count}} to model keys; entries the model cannot express are dropped."""
    job_index = {job.id: j for j, job in enumerate(data.jobs)}
    key_of = {(o.job, data.groups[o.group].id, o.cap_w): o.key for o in data.options}
    counts: Counts = {}
    for job_id, per_device in allocations.items():
        j = job_index.get(job_id)
        for (device, cap_w), n in per_device.items():
            key = key_of.get((j, device, float(cap_w))) if j is not None else None
            if key is not None and n > 0:
                counts[key] = counts.get(key, 0) + int(n)
    return counts


def _option_values(b: SolverBackend, result: SolveResult, data: ModelData) -> dict[tuple[int, int, int], float]:
    """The devices of every placement option at `result` (fractional at an LP point)."""
    values = b.values(result, "n", [o.key for o in data.options])
    return {o.key: values[o.key] for o in data.options}


def _counts_of(b: Builder, data: ModelData, values: np.ndarray) -> Counts:
    return {o.key: int(round(values[b.column("n", o.key)])) for o in data.options}


def _solve_neighbourhood(
    b: Builder, data: ModelData, fractional: Mapping[tuple[int, int, int], float], tracker: IncumbentTracker,
    budget: TimeBudget, threads: int | None,
) -> Counts | None:
    """RENS: the MILP with each n limited to [0, ceil(LP value)]: a small sub-MIP whose plans stay near the LP."""
    share = budget.share(NEIGHBOURHOOD_SHARE, at_least=1.0)
    box: ColumnBounds = {("n", o.key): (0.0, float(math.ceil(fractional[o.key] - 1e-6))) for o in data.options}
    warm = _warm_start(data, tracker.best) if tracker.best is not None else None
    request = SolveRequest(share.deadline, tracker.gap / 2, threads=threads, warm_start=warm, presolve=True)
    result = b.solve_within(box, request)
    if result.values is None:
        return None
    return {k: int(round(v)) for k, v in _option_values(b, result, data).items()}


def _add_cuts(
    b: Builder, data: ModelData, counts: Counts, exact: list[float], modelled: Mapping[Hashable, float]
) -> int:
    added = 0
    by_job = used_by_job(data, counts)
    for j, job in enumerate(data.jobs):
        if modelled[j] <= exact[j] * (1 + CUT_TOLERANCE) + CUT_TOLERANCE:
            continue
        s_host, r = aggregate(by_job[j])
        if 0.0 < job.parallel_fraction < 1.0 and s_host > 0:
            added += add_tangent_cut(b, data, j, tangent_point(job.parallel_fraction, s_host, r))
    return added


def _warm_start(data: ModelData, counts: Counts) -> WarmValues:
    """A plan with its exact speedups satisfies every cut (they touch S from above), so it is a valid start."""
    warm: WarmValues = {("n", k): float(counts.get(k, 0)) for k in (o.key for o in data.options)}
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
