"""Column generation (optsched.solve.columns): its per-job bound and its Lagrangian bound never fall below what
exhaustive search finds, its plans verify and never beat the optimum, and the planner proves large workloads
with it. Prices are drawn at random: the bounds must hold for any prices >= 0."""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import optsched
import optsched.solve.strategies.columns as columns_strategy
from optsched import SolveOptions, Status, Workload
from optsched.model.data import ModelData
from optsched.model.objectives import OBJECTIVES
from optsched.solve import highs
from optsched.solve.bound import NU_SHARES
from optsched.solve.budget import TimeBudget
from optsched.solve.columns import ColumnMaster, ColumnStats, Controls, JobBounds, Pricing, solve_by_columns
from optsched.solve.columns import bounds as columns_bounds
from optsched.solve.columns import pricing as columns_pricing
from optsched.solve.columns.fanout import FAN_OUT_MIN_BLOCKS
from optsched.solve.columns.generation import NEAR_LP_SHARES, Center, _final_bound
from optsched.solve.construct import construct
from optsched.solve.extract import exact_speedups, extract, weighted
from optsched.solve.highs import Outcome
from optsched.testing.instances import generate_racks
from optsched.verify.placement import verify
from tests.oracle import _job_options, brute_force, tiny_case
from tests.support.columns import run_columns
from tests.support.factories import tiny_workloads
from tests.support.timing import past_deadline


def _prices(w: Workload, mu: dict[str, float], lam: dict[str | None, float]):
    """Price of one device of group g at cap c: mu_g + (c - idle_g) x the budget prices over g (written again
    from the definition, apart from the code under test)."""

    def price(gid: str, cap: float) -> float:
        g = next(d for d in w.devices if d.id == gid)
        scopes = [None] if w.power.budget_w is not None else []
        if g.domain is not None and g.domain in w.power.domains:
            scopes.append(g.domain)
        return mu[gid] + (cap - g.idle_w) * sum(lam[s] for s in scopes)

    return price


def _duals(data: ModelData, mu: dict[str, float], lam: dict[str | None, float]) -> tuple[np.ndarray, np.ndarray]:
    from optsched.model.expressions import budgets

    return (
        np.array([mu[g.id] for g in data.groups]),
        np.array([lam[domain] for domain, _ in budgets(data)]),
    )


@st.composite
def priced_workloads(draw):
    w = Workload.load(draw(tiny_workloads(max_jobs=3, max_groups=3, max_count=4)))
    price = st.sampled_from([0.0, 0.05, 0.3, 1.0, 2.5])
    mu = {g.id: draw(price) for g in w.devices}
    lam = {None: draw(st.sampled_from([0.0, 1e-3, 1e-2]))}
    lam.update({d: draw(st.sampled_from([0.0, 1e-3, 1e-2])) for d in w.power.domains})
    return w, mu, lam


@given(priced_workloads())
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_job_bound_covers_every_allocation_of_the_job(case):
    w, mu, lam = case
    data = ModelData(w)
    master = ColumnMaster(data)
    mu_a, lam_a = _duals(data, mu, lam)
    pi = master.level_prices(mu_a, lam_a)
    bounds = JobBounds(master).job_bounds(np.arange(len(w.jobs)), pi)
    price = _prices(w, mu, lam)
    for j, job in enumerate(w.jobs):
        options = _job_options(w, job)
        if not options:
            continue
        best = max(o["value"] - sum(n * price(gid, cap) for (gid, cap), n in o["alloc"].items()) for o in options)
        assert bounds[j] >= best - 1e-9 * max(1.0, abs(best)), (job.id, bounds[j], best)


@pytest.mark.slow
@given(tiny_workloads(max_jobs=4, max_groups=3, max_count=4))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_column_generation_bounds_and_plans_bracket_the_optimum(workload):
    w = Workload.load(workload)
    if w.objective != "weighted_speedup":
        return
    data = ModelData(w)
    optimum, _ = brute_force(w)
    first = construct(data)
    if optimum is None or not first:
        return
    objective = OBJECTIVES["weighted_speedup"]
    plans, bounds = [], []
    best = {"counts": first, "value": weighted(data, exact_speedups(data, first))}

    def consider(counts):
        plans.append(counts)
        value = weighted(data, exact_speedups(data, counts))
        if value > best["value"]:
            best.update(counts=counts, value=value)

    stats = solve_by_columns(
        data, best=lambda: (best["counts"], best["value"]), budget=TimeBudget.of(10.0), gap=1e-4,
        consider=consider, on_bound=bounds.append,
    )
    assert bounds, "column generation reported no bound"
    assert min(bounds) >= optimum - 1e-6 * max(1.0, abs(optimum))
    assert stats.bound >= optimum - 1e-6 * max(1.0, abs(optimum))
    for counts in plans:
        plan = extract(data, objective, counts, Status.heuristic, None, (), time.monotonic(), 0)
        assert verify(w, plan) == []
        assert plan.weighted_speedup <= optimum + 1e-6 * max(1.0, abs(optimum))


@pytest.mark.slow
@given(tiny_workloads(max_jobs=4, max_groups=3, max_count=4))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_planner_on_the_column_path_matches_exhaustive_search(workload):
    w = Workload.load(workload)
    optimum, _ = brute_force(w)
    # Every workload with a first plan is split, as those above direct_max_options are: weighted_speedup by columns.
    result = optsched.plan(w, time_limit_s=10, options=SolveOptions(direct_max_options=0))
    assert verify(w, result) == []
    if w.objective != "weighted_speedup" or optimum is None or result.status == Status.infeasible:
        return
    assert result.bound >= optimum - 1e-6 * max(1.0, abs(optimum))
    if result.status == Status.optimal:
        assert result.objective >= optimum / (1 + 1.1 * w.options.mip_gap) - 1e-6


@pytest.mark.slow
def test_rack_workload_is_proven_within_its_gap_by_columns():
    # 200 jobs x 16 groups with per-rack budgets and a quarter hard jobs, pushed onto the column path.
    w = generate_racks("M", 0)
    # The one MILP needs about a minute to prove this workload (columns: about 2 s); 5 s of it gives a plan and a
    # valid, looser bound, which is all the bracket below needs.
    direct = optsched.plan(w, time_limit_s=5)
    columns = optsched.plan(w, time_limit_s=60, options=SolveOptions(strategy="columns"))
    assert verify(w, columns) == [] and verify(w, direct) == []
    assert columns.timings["column_rounds"] >= 1
    assert columns.status == Status.optimal, (columns.status, columns.gap)
    assert columns.gap <= w.options.mip_gap * 1.1
    # Each bound holds whether or not its search ended, so each plan is below the other's bound.
    assert columns.objective <= direct.bound * (1 + 1e-6) and direct.objective <= columns.bound * (1 + 1e-6)


@pytest.mark.slow
def test_column_path_keeps_the_time_limit_and_streams_verified_incumbents():
    # 1,000 jobs x 32 groups pushed onto the column path with a limit far too short to prove it.
    w = generate_racks("L", 1, options={"time_limit_s": 4.0})
    seen: list[optsched.Plan] = []
    start = time.monotonic()
    result = optsched.plan(w, on_incumbent=seen.append, options=SolveOptions(strategy="columns"))
    elapsed = time.monotonic() - start
    # The watchdog's bound on a HiGHS that overruns (grace, then the wait for its interrupt) on a busy machine
    # (CI measured 5.6 s; a 2-core machine 7.3 s at load 3-5, 16.6 s at load 11).
    assert elapsed <= past_deadline(4.0, highs.WATCHDOG_GRACE_S + highs.CANCEL_WAIT_S), elapsed
    assert verify(w, result) == []
    assert result.status in (Status.time_limit, Status.optimal)
    assert result.bound is not None and result.bound >= result.objective
    assert seen and all(verify(w, p) == [] for p in seen)
    assert [p.objective for p in seen] == sorted(p.objective for p in seen)


def _random_prices(seed: int, price_seed: int):
    """A racks M master and random device and watt prices: (workload, master, bounds, mu, lam)."""
    w = generate_racks("M", seed)
    master = ColumnMaster(ModelData(w))
    rng = np.random.default_rng(price_seed)
    mu = rng.uniform(0.0, 0.5, len(master.data.groups))
    lam = rng.uniform(0.0, 1e-3, len(master.headroom))
    return w, master, JobBounds(master), mu, lam


def test_timed_refinement_sizes_its_blocks_without_changing_the_bound():
    # The refined bound with a deadline far away (blocks sized by measured time) equals the untimed one (fixed
    # blocks): each job's bound is its own, so block sizes may only change where the loop stops.
    w, master, bounds, mu, lam = _random_prices(0, 3)
    sigma = np.zeros(len(w.jobs))
    _, upper = bounds.bound(mu, lam, NU_SHARES)
    untimed = bounds.refined_bound(sigma, mu, lam, upper)
    timed = bounds.refined_bound(sigma, mu, lam, upper, deadline=time.monotonic() + 3600.0)
    assert untimed < float(mu @ master.a.count + lam @ master.headroom + np.maximum(upper, 0).sum())
    assert timed == untimed


def test_split_blocks_give_each_job_its_bound_and_jobs_too_large_keep_the_closed_form(monkeypatch):
    w, master, bounds, mu, lam = _random_prices(1, 5)
    pi = master.level_prices(mu, lam)
    jobs = np.arange(len(w.jobs))
    whole = bounds.job_bounds(jobs, pi)
    monkeypatch.setattr(columns_bounds, "BLOCK_ELEMENTS", 1)  # every block split down to single jobs
    assert np.array_equal(bounds.job_bounds(jobs, pi), whole)
    # Under a cap that no job fits, nothing is enumerated and the refined bound is the closed form itself.
    sigma = np.zeros(len(w.jobs))
    total, upper = bounds.bound(mu, lam, NU_SHARES)
    assert np.isnan(bounds._job_bound_block(jobs[:4], pi, sigma[:4], cap=0)).all()
    monkeypatch.setattr(columns_bounds, "REFINE_MAX_ELEMENTS", 0)
    kept = np.where(master.a.must, upper, np.maximum(upper, 0))
    closed = float(mu @ master.a.count + lam @ master.headroom + kept.sum())
    assert bounds.refined_bound(sigma, mu, lam, upper) == pytest.approx(closed, rel=1e-12)
    assert closed == pytest.approx(total, rel=1e-9)


@pytest.mark.slow
@given(priced_workloads())
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_final_bound_from_the_center_is_no_worse_and_never_below_the_optimum(case):
    # The time limit ends the rounds: the bound minimised from the stability center (any prices) may only lower
    # the center's and never below what exhaustive search finds.
    w, mu, lam = case
    if w.objective != "weighted_speedup":
        return
    optimum, _ = brute_force(w)
    data = ModelData(w)
    master = ColumnMaster(data)
    bounds = JobBounds(master)
    center = Center(bounds.bound(*_duals(data, mu, lam))[0], *_duals(data, mu, lam))
    stats = ColumnStats()
    mu_f, lam_f, found, upper = _final_bound(data, master, bounds, center, 0.0, TimeBudget.of(0.02), stats)
    assert found <= center.bound * (1 + 1e-9) + 1e-9 and stats.final_evaluations >= 1
    # The per-job parts (which the refinement starts from) are those of the bound at the prices returned.
    assert found == pytest.approx(float(mu_f @ master.a.count + lam_f @ master.headroom + upper.sum()), rel=1e-9)
    if optimum is not None:
        assert found >= optimum - 1e-6 * max(1.0, abs(optimum))


# -- the rounds' machinery: partial pricing, column management, smoothing, early stop --------------------------

# Every mechanism off: each round prices every job at the LP's duals, keeps every column, runs to convergence.
PLAIN = Controls(smoothing=0.0, partial=0.0, drop_after=0, early_stop=0.0, stall_rounds=0)
# Every mechanism on and tight enough to act on tiny workloads, but the rounds run to convergence (the stall rule
# has its test in tests/test_fleet_search.py).
TIGHT = Controls(smoothing=0.7, partial=0.1, partial_min=1, drop_after=1, early_stop=0.0, stall_rounds=0)


def _lp_duals(w: Workload, seed: int):
    """A master holding the first plan and one round of columns at random prices, solved: (master, pricing,
    bounds, sigma, mu, lam, first plan)."""
    data = ModelData(w)
    master = ColumnMaster(data)
    pricing, bounds = Pricing(master), JobBounds(master)
    first = construct(data)
    master.add_counts(first)
    rng = np.random.default_rng(seed)
    pricing.seed(rng.uniform(0.0, 0.5, len(data.groups)), rng.uniform(0.0, 1e-3, len(master.headroom)))
    _, sigma, mu, lam = master.solve_lp(time.monotonic() + 60.0)
    return master, pricing, bounds, sigma, mu, lam, first


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_partial_pricing_returns_the_most_promising_of_the_full_columns(seed):
    master, pricing, bounds, sigma, mu, lam, _ = _lp_duals(generate_racks("M", seed), seed)
    _, upper = bounds.bound(mu, lam)
    full = pricing.price(sigma, mu, lam, upper)
    assert full, "the first round found no column: the test needs one"
    for enough in (1, 7, 40):
        partial = pricing.price(sigma, mu, lam, upper, enough=enough)
        # Each job's column is its own best, whichever jobs share its block.
        assert set(partial) <= set(full)
        assert len(partial) >= min(enough, len(full))
        # Only jobs at least as promising as the least promising one priced were priced before it stopped.
        promise = (upper - sigma)[[j for j, _ in full]]
        least = min((upper - sigma)[j] for j, _ in partial)
        assert len(partial) <= (promise >= least).sum()
    # Nothing to find: partial pricing says so too.
    rich = sigma + 1e6
    assert pricing.price(rich, mu, lam, upper) == [] == pricing.price(rich, mu, lam, upper, enough=5)



@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_pricing_with_few_hosts_finds_a_column_whenever_every_host_would(seed):
    master, *_ = _lp_duals(generate_racks("L", seed), seed)
    pricing = Pricing(master, hosts=1)
    # Prices at random (the LP's first duals leave most devices free: one host is then the whole frontier).
    rng = np.random.default_rng(seed)
    mu, lam = rng.uniform(0.0, 2.0, master.groups), rng.uniform(0.0, 1e-2, master.budget_rows)
    sigma = rng.uniform(0.0, 1.0, master.jobs) * master.a.weight
    pi = master.level_prices(mu, lam)
    jobs = np.arange(master.jobs)
    front, on_front = columns_pricing.frontier(master.a, master.a.speeds(jobs), pi)
    assert (on_front.sum(axis=1) > 1).any(), "no job has two hosts to choose from: the test needs one"
    every_host = pricing.blocks.price_block(jobs, sigma, pi, None)
    one_host = pricing.blocks.price_block(jobs, sigma, pi, 1)
    # One host rated best per job: each column it finds improves at these duals, and it never finds more.
    assert pricing.improving(one_host, sigma, mu, lam) == one_host
    assert {j for j, _ in one_host} <= {j for j, _ in every_host}
    # A round prices again with every host when the few found nothing: empty only where every host finds nothing.
    # Paying each job what its one host's columns earn (the single-level family's, then the spread ones') leaves
    # that host nothing, and the others what they earn beyond it.
    paid, found = sigma.copy(), one_host
    while found:
        for j, column in found:
            paid[j] = master.value_of(j, column) - sum(pi[k] * n for k, n in column) + 1e-6 * master.a.weight[j]
        found = pricing.blocks.price_block(jobs, paid, pi, 1)
    for duals in (sigma, paid, sigma + 1e6 * master.a.weight):
        found = pricing.price(duals, mu, lam)
        assert bool(found) == bool(pricing.blocks.price_block(jobs, duals, pi, None))
        assert pricing.improving(found, duals, mu, lam) == found
    assert pricing.price(paid, mu, lam), "every host found nothing more either: the test needs it to"


@pytest.mark.slow
def test_rounds_with_few_hosts_end_only_where_no_host_finds_a_column():
    w = generate_racks("M", 2)
    data = ModelData(w)
    master = ColumnMaster(data)
    pricing = Pricing(master, hosts=1)
    master.add_counts(construct(data))
    rounds = 0
    while True:
        value, sigma, mu, lam = master.solve_lp(time.monotonic() + 60.0)
        rounds += 1
        if not master.add(pricing.price(sigma, mu, lam)):
            break
    assert rounds > 2
    # Converged: at the last duals no column of the family improves, whatever its host.
    every_host = pricing.blocks.price_block(np.arange(master.jobs), sigma, master.level_prices(mu, lam), None)
    assert every_host == []
    # The planner's rounds, with one host and with every host: plans verify, bounds hold, and the LPs differ by
    # no more than the spread families' fixed points do (they start from the hosts the single-level family
    # rates best: 0.26 % here).
    _, all_hosts, *_ = run_columns(w, dataclasses.replace(PLAIN, hosts=None))
    data, one_host, plans, bounds, best = run_columns(w, dataclasses.replace(PLAIN, hosts=1))
    assert all_hosts.converged and one_host.converged
    assert one_host.lp_value == pytest.approx(all_hosts.lp_value, rel=5e-3)
    assert one_host.lp_value == pytest.approx(value, rel=1e-6)
    assert min(bounds) >= best * (1 - 1e-9)
    objective = OBJECTIVES["weighted_speedup"]
    for counts in plans:
        assert verify(w, extract(data, objective, counts, Status.heuristic, None, (), time.monotonic(), 0)) == []


@pytest.mark.parametrize("seed", [0, 1])
def test_dropped_columns_never_remove_the_best_plans_and_the_master_stays_consistent(seed):
    w = generate_racks("M", seed)
    master, pricing, bounds, sigma, mu, lam, first = _lp_duals(w, seed)
    before = len(master.columns)
    placed = set(master.columns_in(first))
    # after=-1: every column may go (even those the LP uses) but the plan's.
    dropped = master.drop(-1, keep=first)
    assert dropped == before - len(placed) > 0
    assert set(zip(master.column_job, master.columns, strict=True)) == placed
    assert master.h.getNumCol() == len(master.columns) == len(master.values) == len(master.idle)
    assert all(master.column_job[i] == j and master.columns[i] == c for (j, c), i in master.index.items())
    costs = np.asarray(master.h.getLp().col_cost_)
    assert np.allclose(costs, master.values)
    # The master solves again: its LP holds at least the plan (each job's one column at 1 is feasible), and its
    # integer solve hands over plans the verifier accepts.
    value, *_ = master.solve_lp(time.monotonic() + 60.0)
    data = master.data
    assert value >= weighted(data, exact_speedups(data, first)) * (1 - 1e-9)
    plans = []
    master.solve_mip(time.monotonic() + 60.0, 1e-4, first, plans.append)
    objective = OBJECTIVES["weighted_speedup"]
    assert plans and all(
        verify(w, extract(data, objective, c, Status.heuristic, None, (), time.monotonic(), 0)) == [] for c in plans
    )


def test_columns_unused_for_fewer_rounds_than_the_limit_stay():
    master, pricing, bounds, sigma, mu, lam, first = _lp_duals(generate_racks("M", 0), 0)
    n = len(master.columns)
    # One LP solve: the idle columns have been unused once, so a limit of 1 keeps them all.
    assert master.drop(1) == 0 and len(master.columns) == n
    master.solve_lp(time.monotonic() + 60.0)
    unused = int((master.idle > 1).sum())
    assert master.drop(1) == unused and len(master.columns) == n - unused


@pytest.mark.slow
def test_stabilised_rounds_reach_the_lp_bound_of_unstabilised_ones():
    w = generate_racks("M", 0)
    runs = (("plain", PLAIN), ("tight", TIGHT), ("default", Controls(stall_rounds=0)))
    results = {name: run_columns(w, c) for name, c in runs}
    lp = {name: r[1].lp_value for name, r in results.items()}
    for name, (data, stats, plans, bounds, value) in results.items():
        assert stats.converged, name
        # Every bound is above every plan, and the plans verify.
        assert min(bounds) >= value * (1 - 1e-9), name
        objective = OBJECTIVES["weighted_speedup"]
        for counts in plans:
            plan = extract(data, objective, counts, Status.heuristic, None, (), time.monotonic(), 0)
            assert verify(w, plan) == [] and plan.weighted_speedup <= min(bounds) * (1 + 1e-9)
    # Converged, each master LP is at the optimum over the columns pricing can reach: the same, up to how far
    # the pricing families' fixed points differ.
    assert lp["tight"] == pytest.approx(lp["plain"], rel=2e-3)
    assert lp["default"] == pytest.approx(lp["plain"], rel=2e-3)
    assert results["tight"][1].dropped > 0


@pytest.mark.slow
def test_early_stop_ends_the_rounds_with_a_valid_bound():
    w = generate_racks("M", 1)
    _, full, _, _, _ = run_columns(w, PLAIN, gap=1e-2)
    # A share of 100 x the gap of 1 %: the rounds stop once the bound is within the LP's value of the LP (the
    # rounds' closed-form bound is looser than the refined one the planner reports).
    data, early, plans, bounds, value = run_columns(w, Controls(early_stop=100.0), gap=1e-2)
    assert early.early_stop and not early.converged
    assert early.rounds < full.rounds
    # Valid: above the converged LP (the best over every column pricing reaches) and every plan.
    assert min(bounds) >= full.lp_value * (1 - 1e-9) and min(bounds) >= value * (1 - 1e-9)


@pytest.mark.slow
@given(tiny_workloads(max_jobs=4, max_groups=3, max_count=4))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_tight_controls_keep_bounds_and_plans_around_the_optimum(workload):
    case = tiny_case(workload)
    if case is None:
        return
    w, optimum = case
    data, stats, plans, bounds, value = run_columns(w, TIGHT, seconds=10.0)
    tol = 1e-6 * max(1.0, abs(optimum))
    assert bounds and min(bounds) >= optimum - tol and stats.bound >= optimum - tol
    assert value <= optimum + tol
    objective = OBJECTIVES["weighted_speedup"]
    for counts in plans:
        assert verify(w, extract(data, objective, counts, Status.heuristic, None, (), time.monotonic(), 0)) == []


@pytest.mark.parametrize("workers", [2, 3])
def test_parallel_pricing_returns_exactly_the_serial_columns(workers):
    master, pricing, bounds, sigma, mu, lam, _ = _lp_duals(generate_racks("L", 0), 4)
    _, upper = bounds.bound(mu, lam)
    serial = pricing.price(sigma, mu, lam, upper)
    parallel = Pricing(master, workers=workers)
    try:
        assert len(pricing._blocks(np.flatnonzero(upper - sigma > 0))) > workers  # there are blocks to share
        assert parallel.price(sigma, mu, lam, upper) == serial
        assert parallel.price(sigma, mu, lam, upper, enough=300) == pricing.price(sigma, mu, lam, upper, enough=300)
        assert parallel._pool is not None  # the workers priced them
    finally:
        parallel.close()
    assert parallel._pool is None


@pytest.mark.parametrize("threads", [2, 3])
def test_threaded_rounds_price_and_bound_exactly_as_one_thread(threads):
    master, pricing, bounds, sigma, mu, lam, _ = _lp_duals(generate_racks("L", 0), 4)
    total, upper = bounds.bound(mu, lam, NU_SHARES)
    serial = pricing.price(sigma, mu, lam, upper)
    threaded = ColumnMaster(master.data, threads=threads)
    assert threaded.relax.threads == threads
    threaded_pricing, threaded_bounds = Pricing(threaded), JobBounds(threaded)
    assert len(pricing._blocks(np.flatnonzero(upper - sigma > 0))) > threads  # there are blocks to share
    again, again_upper = threaded_bounds.bound(mu, lam, NU_SHARES)
    assert again == total and np.array_equal(again_upper, upper)
    assert threaded_pricing.price(sigma, mu, lam, upper) == serial
    assert threaded_pricing.price(sigma, mu, lam, upper, enough=300) == pricing.price(sigma, mu, lam, upper, enough=300)


def test_pricing_threads_below_one_and_negative_hosts_are_refused():
    with pytest.raises(ValueError, match="pricing_threads"):
        SolveOptions(pricing_threads=0)
    with pytest.raises(ValueError, match="pricing_hosts"):
        SolveOptions(pricing_hosts=-1)
    # The planner's default and the library's are one number.
    assert SolveOptions().pricing_hosts == columns_pricing.HOSTS_PRICED == Controls().hosts


# -- the integer step: the LP rounded, the master over its fractional jobs ------------------------------------


def _rounds(w: Workload, rounds: int):
    """A master after `rounds` rounds of full pricing at the LP's duals, its LP solved: (master, mu, lam)."""
    master, pricing, bounds, sigma, mu, lam, _ = _lp_duals(w, 0)
    for _ in range(rounds):
        _, upper = bounds.bound(mu, lam)
        if not master.add(pricing.price(sigma, mu, lam, upper)):
            break
        _, sigma, mu, lam = master.solve_lp(time.monotonic() + 60.0)
    return master, mu, lam


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rounded_lp_fits_and_keeps_the_lp_whole_jobs(seed):
    w = generate_racks("M", seed)
    master, mu, lam = _rounds(w, 3)
    data = master.data
    rounded = master.rounded()
    assert rounded is not None
    completed = construct(data, master.level_prices(mu, lam), start=rounded)
    assert completed, "construct could not complete the rounded plan"
    objective = OBJECTIVES["weighted_speedup"]
    plan = extract(data, objective, completed, Status.heuristic, None, (), time.monotonic(), 0)
    assert verify(w, plan) == []
    # The must-run jobs' columns are taken first; every other job the LP holds whole keeps its column unless the
    # rounding of a must-run job took its room: at most one job per must-run job the LP holds fractionally.
    kept = set(master.columns_in(rounded))
    whole = np.flatnonzero(master.integral())
    jobs = np.asarray(master.column_job)
    fractional_must = {j for j in jobs[(master.lp_x > 1e-6) & ~master.integral()] if master.a.must[j]}
    lost = [c for c in whole if (int(jobs[c]), master.columns[c]) not in kept]
    assert len(lost) <= sum(len(master.columns_in({k: n for k, n in rounded.items() if k[0] == j})) + 4
                            for j in fractional_must), (len(lost), len(fractional_must))


@pytest.mark.parametrize("seed", [0, 1])
def test_master_over_the_fractional_jobs_keeps_the_fixed_columns(seed):
    w = generate_racks("M", seed)
    master, mu, lam = _rounds(w, 3)
    data = master.data
    rounded = construct(data, master.level_prices(mu, lam), start=master.rounded())
    integral = master.integral()
    master.add_counts(rounded)
    fix = integral & np.isin(np.arange(len(integral)), [master.index[k] for k in master.columns_in(rounded)])
    plans: list = []
    result = master.solve_mip(time.monotonic() + 60.0, 1e-6, rounded, plans.append, fix=fix)
    assert result is not None and result.values is not None
    chosen = set(np.flatnonzero(result.values > 0.5))
    assert set(np.flatnonzero(fix)) <= chosen
    objective = OBJECTIVES["weighted_speedup"]
    for counts in plans:
        assert verify(w, extract(data, objective, counts, Status.heuristic, None, (), time.monotonic(), 0)) == []
    # At least as good as its warm start, and the master's bounds are back to [0, 1] for the next solve.
    assert weighted(data, exact_speedups(data, master.counts(result.values))) >= weighted(
        data, exact_speedups(data, rounded)) * (1 - 1e-9)
    lp = master.h.getLp()
    assert np.all(np.asarray(lp.col_lower_) == 0.0) and np.all(np.asarray(lp.col_upper_) == 1.0)


@pytest.mark.slow
@pytest.mark.parametrize("stop_at", [None, 1])
def test_integer_master_widens_its_neighbourhood_only_after_an_optimum(monkeypatch, stop_at):
    # A gap nothing meets keeps the integer step going: each neighbourhood of the LP (NEAR_LP_SHARES, then every
    # column) is tried only after the one before was solved to its optimum; `stop_at` makes that call stop short.
    calls: list[tuple[int | None, Outcome]] = []
    solve_mip = ColumnMaster.solve_mip

    def recorded(self, deadline, gap, start, consider, threads=None, keep=None, fix=None):
        result = solve_mip(self, deadline, gap, start, consider, threads, keep=keep, fix=fix)
        if fix is None and result is not None:
            if len(calls) == stop_at:
                result = dataclasses.replace(result, outcome=Outcome.limit_with_solution)
            calls.append((None if keep is None else int(keep.sum()), result.outcome))
        return result

    monkeypatch.setattr(ColumnMaster, "solve_mip", recorded)
    w = generate_racks("M", 1)
    data, stats, plans, bounds, value = run_columns(w, Controls(), gap=1e-9, seconds=30.0)
    assert calls, "the integer master never ran"
    assert all(outcome is Outcome.optimal for _, outcome in calls[:-1])
    sizes = [n for n, _ in calls]
    widths = [n for n in sizes if n is not None]
    assert widths == sorted(widths) and None not in sizes[:-1]
    if stop_at is None:
        assert len(calls) == len(NEAR_LP_SHARES) + 1 and sizes[-1] is None
    else:
        assert len(calls) == stop_at + 1
    assert value <= min(bounds) * (1 + 1e-9)
    objective = OBJECTIVES["weighted_speedup"]
    for counts in plans[-3:]:
        assert verify(w, extract(data, objective, counts, Status.heuristic, None, (), time.monotonic(), 0)) == []


@pytest.fixture(scope="module")
def rack_m_converged():
    """racks M seed 0 on the column path with time to converge: a verified plan (no bound may be below its value)
    and a bound (no plan may be above it)."""
    w = generate_racks("M", 0)
    converged = optsched.plan(w, time_limit_s=60, options=SolveOptions(strategy="columns"))
    assert verify(w, converged) == [] and converged.status == Status.optimal
    return w, converged


@pytest.mark.slow
@pytest.mark.parametrize("limit", [0.5, 1.0, 3.0])
def test_columns_stopped_by_the_time_limit_report_a_valid_gap(rack_m_converged, limit):
    # Whatever stops the column path (here the time limit, before the rounds converge), its bound is never below
    # a verified plan's value and its plan never above a proven bound; the gap is the one of those two.
    w, converged = rack_m_converged
    stopped = optsched.plan(w, time_limit_s=limit, options=SolveOptions(strategy="columns"))
    assert verify(w, stopped) == []
    assert stopped.bound >= converged.objective * (1 - 1e-9)
    assert stopped.objective <= converged.bound * (1 + 1e-9)
    assert stopped.gap == pytest.approx((stopped.bound - stopped.objective) / stopped.objective, rel=1e-6)


class _InProcessFanOut:
    """A fan-out whose session prices every block with `local` (as one whose workers all solve), counting."""

    def __init__(self, width: int):
        self._width = width
        self.opened = 0
        self.blocks: list[int] = []

    def width(self) -> int:
        return self._width

    def open(self, a, hosts):
        self.opened += 1
        fan_out = self

        class Session:
            def price(self, blocks, sigma, pi, local):
                fan_out.blocks.append(len(blocks))
                return [local(b) for b in blocks]

            def close(self):
                pass

        return Session()


def test_a_fan_out_prices_large_rounds_only_and_partial_rounds_ask_for_each_process():
    master, pricing, bounds, sigma, mu, lam, _ = _lp_duals(generate_racks("L", 0), 4)
    _, upper = bounds.bound(mu, lam)
    fan_out = _InProcessFanOut(width=3)
    fanned = Pricing(master, fan_out=fan_out)
    assert fanned.price(sigma, mu, lam, upper) == pricing.price(sigma, mu, lam, upper)
    assert fan_out.opened == 1 and fan_out.blocks and min(fan_out.blocks) >= FAN_OUT_MIN_BLOCKS
    # Partial pricing: one segment of 3 x `enough` jobs (the most promising) where one process prices `enough`.
    partial = fanned.price(sigma, mu, lam, upper, enough=300)
    assert {j for j, _ in pricing.price(sigma, mu, lam, upper, enough=300)} <= {j for j, _ in partial}
    assert {j for j, _ in partial} <= {j for j, _ in pricing.price(sigma, mu, lam, upper, enough=900)}
    small = Pricing(master, fan_out=_InProcessFanOut(width=1))
    small.price(sigma, mu, lam, upper, enough=300)  # 300 jobs a segment: 3 blocks, priced here
    assert small.fan_out is not None and small.fan_out.opened == 0
    fanned.close()


@given(tiny_workloads(max_jobs=3, max_groups=3, max_count=4))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_shrunk_columns_are_every_valid_allocation_with_fewer_devices_at_one_level(document):
    # Against the oracle's own list of every valid allocation (eligibility, device counts, deadline): a column's
    # shrunk versions are exactly those that take 1 .. n devices away from one of its levels.
    w = Workload.load(document)
    data = ModelData(w)
    master = ColumnMaster(data)
    kept = {
        (data.groups[g].id, data.groups[g].power_levels[lv].cap_w): k for (g, lv), k in master.level_of.items()
    }
    valid: dict[int, set] = {}
    for j, job in enumerate(w.jobs):
        for option in _job_options(w, job):
            if all(key in kept for key in option["alloc"]):
                column = tuple(sorted((kept[key], n) for key, n in option["alloc"].items() if n > 0))
                valid.setdefault(j, set()).add(column)
    master.add([(j, column) for j, columns in valid.items() for column in columns])
    for c, (j, column) in enumerate(zip(master.column_job, master.columns, strict=True)):
        at = dict(column)
        expected = {
            other for other in valid[j]
            if other != column and sum(1 for k, n in at.items() if dict(other).get(k, 0) != n) == 1
            and all(dict(other).get(k, 0) <= n for k, n in at.items()) and set(dict(other)) <= set(at)
        }
        assert set(master.shrunk(np.array([c]))) == {(j, other) for other in expected}, (j, column)


@pytest.mark.slow
def test_shrunk_columns_join_the_integer_master_but_not_the_lps_neighbourhoods(monkeypatch):
    # The LP's fractional columns with fewer devices join the master over the fractional jobs and the one over
    # every column, never a neighbourhood of the LP (they kept its first stage from its optimum); every plan
    # verifies and none is above a bound.
    added_at: list[int] = []
    stages: list[tuple[str, np.ndarray | None, set[int]]] = []
    shrunk, solve_mip = ColumnMaster.shrunk, ColumnMaster.solve_mip

    def recorded_shrunk(self, columns):
        added_at.append(len(self.columns))
        return shrunk(self, columns)

    def recorded_mip(self, deadline, gap, start, consider, threads=None, keep=None, fix=None):
        chosen = {self.index[key] for key in self.columns_in(start) if key in self.index} if start else set()
        kind = "fractional" if fix is not None else "every" if keep is None else "near"
        stages.append((kind, None if keep is None else keep.copy(), chosen))
        return solve_mip(self, deadline, gap, start, consider, threads, keep=keep, fix=fix)

    monkeypatch.setattr(ColumnMaster, "shrunk", recorded_shrunk)
    monkeypatch.setattr(ColumnMaster, "solve_mip", recorded_mip)
    w = generate_racks("M", 1)
    data, stats, plans, bounds, value = run_columns(w, Controls(), gap=1e-9, seconds=30.0)
    assert len(added_at) == 1 and stats.shrunk > 0
    new = set(range(added_at[0], added_at[0] + stats.shrunk))
    kinds = [kind for kind, _, _ in stages]
    assert "near" in kinds
    for kind, keep, chosen in stages:
        if kind == "near":
            assert keep is not None
            # Only those the best plan already holds (solve_mip keeps its start's columns).
            assert {c for c in new if c < len(keep) and keep[c]} <= chosen
        if kind == "fractional" and keep is not None:
            assert all(keep[c] for c in new if c < len(keep))
    assert value <= min(bounds) * (1 + 1e-9)
    objective = OBJECTIVES["weighted_speedup"]
    for counts in plans[-3:]:
        assert verify(w, extract(data, objective, counts, Status.heuristic, None, (), time.monotonic(), 0)) == []
    _, off, *_ = run_columns(w, Controls(shrink=False), gap=1e-9, seconds=30.0)
    assert off.shrunk == 0


@pytest.mark.parametrize(("shrink", "hosts", "controls_hosts"), [(True, 24, 24), (False, 0, None), (True, 3, 3)])
def test_solve_options_reach_the_rounds_controls(monkeypatch, shrink, hosts, controls_hosts):
    seen: list[Controls] = []
    real = columns_strategy.solve_by_columns

    def recorded(data, **kwargs):
        seen.append(kwargs["controls"])
        return real(data, **kwargs)

    monkeypatch.setattr(columns_strategy, "solve_by_columns", recorded)
    w = generate_racks("M", 0)
    options = SolveOptions(strategy="columns", shrink_columns=shrink, pricing_hosts=hosts)
    plan = optsched.plan(w, time_limit_s=5, options=options)
    assert verify(w, plan) == []
    assert [(c.shrink, c.hosts) for c in seen] == [(shrink, controls_hosts)]
