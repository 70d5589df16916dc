"""The column generation loop (optsched.solve.columns): rounds of master LP and pricing, the bound refined at the
last duals, then the integer master."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from optsched.model.data import ModelData
from optsched.solve.bound import NU_SHARES, Lagrangian
from optsched.solve.budget import TimeBudget
from optsched.solve.columns.bounds import FILTER_SHARES, JobBounds
from optsched.solve.columns.fanout import PricingFanOut
from optsched.solve.columns.fleet_search import search_blocks
from optsched.solve.columns.master import Column, ColumnMaster, Consider
from optsched.solve.columns.pricing import HOSTS_PRICED, Pricing
from optsched.solve.construct import construct, improve
from optsched.solve.extract import Counts
from optsched.solve.highs import Outcome

log = logging.getLogger(__name__)

# Jobs in the sample whose master prices the seed columns, and the share of column generation's time it may take.
SAMPLE_JOBS = 500
SAMPLE_SHARE = 0.2
# Share of the time that column generation may take before the integer master.
COLUMNS_SHARE = 0.65
# Share of the time left after the rounds (and the plans made from their LP) that minimising the Lagrangian from
# the last duals may take, when the rounds ran out of time.
FINAL_BOUND_SHARE = 0.3
# Share of the time left after it that refining the bound may take.
REFINE_SHARE = 0.2
# Share of the time left after it that the integer master over the LP's fractional jobs (the others fixed) may take.
FIXED_SHARE = 0.4
# The integer master's neighbourhoods of the LP: the columns the LP uses and those within each share of their value
# from a zero reduced profit, widened while each is solved to its optimum in time, then every column. Why: the
# master over the 1 % neighbourhood was optimal in 0.3-2.7 s, and the one over every column improved on it in
# neither run logged (racks3 2,000 x 144: 30 s without a better plan); widening reached 13,539 against 13,207.
NEAR_LP_SHARES = (0.01, 0.03, 0.1, 0.3)
# Where the rounds ended by themselves (converged, stalled or stopped early), the first NEIGHBOURHOODS_FIRST
# neighbourhoods are solved, each within FIRST_STAGES_SHARE of the time left, then the search over the fleet's
# blocks (optsched.solve.columns.fleet_search) takes the rest; the widest one and every column only where it ends
# early. Why three: racks 2,000 x 48 seed 0 is proven (0.08 %) by the 10 % one in 8 s, and after one or two the
# search proved it at 0.93 % in 15 s. Where the time ended the rounds, the LP is still rising and every
# neighbourhood of it comes first: racks 20,000 x 128 ended at 116.0 K with the search after the 1 % one, 121.1 K
# without the search.
NEIGHBOURHOODS_FIRST = 3
FIRST_STAGES_SHARE = 0.2
# The least relative gap asked of the integer master.
MIN_MASTER_GAP = 1e-4
# Partial pricing: the columns a round asks for, as a share of the jobs, but at least PARTIAL_MIN.
PARTIAL_SHARE = 0.125
PARTIAL_MIN = 1000
# Wentges smoothing: the rounds price at this share of the stability center's prices + the rest of the LP's.
# Stronger than half: racks3 2,000 x 144 in 60 s, LP 12,280 and gap 103 % at 0.8 against 11,039 and 202 % at 0.5
# (7,672 and 519 % at 0); racks 10,000 x 100, 53,840 and 51 % against 51,770 and 81 %; racks 2,000 x 48 still
# proven (0.23 %, 32.8 s).
SMOOTHING = 0.8
# Column management: a column no LP has used for this many rounds leaves the master.
DROP_AFTER = 10
# Stall: the rounds end once the LP rose by less than STALL_SHARE of its value over the last STALL_ROUNDS rounds;
# the time left goes to the plans. Why: racks3 2,000 x 144 seed 0 took 68 rounds (29 s of 60) to converge, and
# 25 of them raised the LP by 0.16 % (14,156 to 14,179); the bound after them was the same within 0.1 %.
STALL_ROUNDS = 10
STALL_SHARE = 1e-3
# Early stop: the rounds end once the Lagrangian bound is within this share of the asked gap of the LP value
# (more rounds could raise the LP by no more than that).
EARLY_STOP = 0.25


@dataclass(frozen=True)
class Controls:
    """How the rounds run; the planner uses the defaults, tests and benchmarks compare others. 0 turns each
    mechanism off: `smoothing` (Wentges: price at smoothing x the prices of the least bound so far + the rest x
    the LP duals), `partial` (columns asked per round, as a share of the jobs; `partial_min` at least),
    `drop_after` (rounds a column may stay unused), `early_stop` (share of the gap, see EARLY_STOP),
    `final_bound` (share of the time after the rounds, see FINAL_BOUND_SHARE), `stall_rounds` (see STALL_ROUNDS),
    `shrink` (the LP's fractional
    columns' smaller versions join the integer master, `ColumnMaster.shrunk`). `workers`: processes pricing the
    blocks of jobs of a round (1: this one; the columns are the same); `fan_out`: a queue whose workers price the
    large rounds (optsched.solve.columns.fanout), before local processes; `threads`: threads pricing and bounding
    the blocks in this process (the same columns and bounds; optsched.solve.blocks); `hosts`: hosts per job the
    single-level pricing family pairs with every extra level (None: every one; see HOSTS_PRICED)."""

    smoothing: float = SMOOTHING
    partial: float = PARTIAL_SHARE
    partial_min: int = PARTIAL_MIN
    drop_after: int = DROP_AFTER
    early_stop: float = EARLY_STOP
    stall_rounds: int = STALL_ROUNDS
    workers: int = 1
    final_bound: float = FINAL_BOUND_SHARE
    shrink: bool = True
    fan_out: PricingFanOut | None = None
    threads: int = 1
    hosts: int | None = HOSTS_PRICED

    def wanted(self, jobs: int) -> int | None:
        """Columns a round asks for (None: every job is priced)."""
        return max(self.partial_min, math.ceil(self.partial * jobs)) if self.partial > 0 else None


@dataclass(frozen=True)
class Center:
    """Wentges' stability center: the prices with the least Lagrangian bound so far."""

    bound: float
    mu: np.ndarray
    lam: np.ndarray

    def better(self, bound: float, mu: np.ndarray, lam: np.ndarray) -> Center:
        return Center(bound, mu, lam) if bound < self.bound else self

    def towards(self, share: float, mu: np.ndarray, lam: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """share x the center's prices + (1 - share) x (mu, lambda)."""
        return share * self.mu + (1.0 - share) * mu, share * self.lam + (1.0 - share) * lam


@dataclass
class ColumnStats:
    """What column generation did, for the plan's timings and the benchmark."""

    rounds: int = 0
    columns: int = 0
    converged: bool = False  # pricing found no column with a positive reduced profit
    early_stop: bool = False  # the bound came within EARLY_STOP of the gap of the LP value
    stalled: bool = False  # the LP rose by less than STALL_SHARE over STALL_ROUNDS rounds
    dropped: int = 0  # columns column management deleted
    misprices: int = 0  # rounds where the smoothed prices found no column improving at the LP's duals
    final_evaluations: int = 0  # Lagrangian evaluations of the final bound (`_final_bound`)
    shrunk: int = 0  # smaller versions of the LP's fractional columns given to the integer master
    lp_value: float = math.nan
    bound: float = math.inf  # the least bound found (refined at the last duals)
    pricing_s: float = 0.0
    mip_s: float = 0.0
    block_steps: int = 0  # steps of the search over the fleet's blocks
    block_gain: float = 0.0  # what they added to the plan's value


def sample_prices(
    data: ModelData, first: Counts, budget: TimeBudget, seed: int = 0, threads: int = 1
) -> tuple[np.ndarray, np.ndarray] | None:
    """Device and watt prices from the master of a random sample of SAMPLE_JOBS jobs with that share of the
    capacities and budgets (POP's observation: a random share of the jobs on the same share of the resources
    prices them much as the whole does), or None for a workload that small."""
    jobs = len(data.jobs)
    if jobs < 2 * SAMPLE_JOBS:
        return None
    members = np.random.default_rng(seed).choice(jobs, SAMPLE_JOBS, replace=False)
    sample = ColumnMaster(data, members, scale=SAMPLE_JOBS / jobs, threads=threads)
    pricing, bounds = Pricing(sample), JobBounds(sample)
    sample.add_counts(first)
    prices = None
    while not budget.expired():
        solved = sample.solve_lp(budget.deadline)
        if solved is None:
            break
        value, sigma, mu, lam = solved
        prices = (mu, lam)
        log.debug("sample round: LP %.3f, %d columns", value, len(sample.columns))
        if not sample.add(pricing.price(sigma, mu, lam, bounds.bound(mu, lam)[1])):
            break
    return prices


def solve_by_columns(
    data: ModelData, *, best: Callable[[], tuple[Counts, float]], budget: TimeBudget, gap: float,
    consider: Consider, on_bound: Callable[[float], None], threads: int | None = None,
    controls: Controls = Controls(),
) -> ColumnStats:
    """Column generation for COLUMNS_SHARE of the time (until pricing finds nothing, or the bound is within
    `controls.early_stop` of the gap of the LP), the bound refined, then the integer master: over the columns
    near the LP optimum in widening neighbourhoods (NEAR_LP_SHARES), then over all of them. `best()` gives the
    best plan so far and its value (the master starts from it); every integer plan goes to `consider`, every bound
    to `on_bound`."""
    master = ColumnMaster(data, threads=controls.threads)
    pricing, bounds = Pricing(master, controls.workers, controls.fan_out, controls.hosts), JobBounds(master)
    try:
        return _generate_and_solve(data, master, pricing, bounds, best, budget, gap, consider, on_bound, threads,
                                   controls)
    finally:
        pricing.close()


def _generate_and_solve(
    data: ModelData, master: ColumnMaster, pricing: Pricing, bounds: JobBounds,
    best: Callable[[], tuple[Counts, float]], budget: TimeBudget, gap: float, consider: Consider,
    on_bound: Callable[[float], None], threads: int | None, controls: Controls,
) -> ColumnStats:
    started = time.monotonic()
    generation = budget.share(COLUMNS_SHARE)
    sampling = generation.share(SAMPLE_SHARE)
    stats = ColumnStats()
    first, _ = best()
    master.add_counts(first)
    enough = controls.wanted(len(data.jobs))
    center: Center | None = None
    prices = sample_prices(data, first, sampling, threads=controls.threads)
    if prices is not None:
        # The sample's prices start the center: a bound at once (valid for any prices), and seed columns.
        bound, upper = bounds.bound(*prices)
        center = Center(bound, *prices)
        stats.bound = bound
        on_bound(bound)
        # Every job's best column at the sample's prices, not only the most promising share's: at 10,000 x 100 the
        # master then starts near its optimum's columns (60 s: plan 56,629 and gap 17 % against 50,860 and 31 %).
        pricing.seed(*prices, upper)
    duals = None
    lp_values: list[float] = []
    while not generation.expired():
        solved = master.solve_lp(generation.deadline)
        if solved is None:
            break
        stats.lp_value, sigma, mu, lam = solved
        stats.rounds += 1
        duals = (sigma, mu, lam)
        new, center = _round(pricing, bounds, controls, enough, center, sigma, mu, lam, stats)
        stats.bound = min(stats.bound, center.bound)
        on_bound(stats.bound)
        log.debug(
            "column generation round %d: LP %.3f, bound %.3f, %d new columns, %d columns, %d dropped",
            stats.rounds, stats.lp_value, stats.bound, len(new), len(master.columns), stats.dropped,
        )
        if controls.early_stop > 0 and stats.bound - stats.lp_value <= controls.early_stop * gap * abs(stats.lp_value):
            stats.early_stop = True
            break
        lp_values.append(stats.lp_value)
        stall = controls.stall_rounds
        if stall > 0 and len(lp_values) > stall and lp_values[-1] - lp_values[-1 - stall] < STALL_SHARE * abs(
            lp_values[-1]
        ):
            stats.stalled = True
            break
        if not master.add(new):
            stats.converged = True
            break
        if controls.drop_after > 0:
            stats.dropped += master.drop(controls.drop_after, keep=best()[0])
    stats.columns = len(master.columns)
    if duals is None:
        stats.pricing_s = time.monotonic() - started
        return stats
    sigma, mu, lam = duals
    # The bound first, the plans after: the closed form with every multiplier at the last duals and, when the
    # rounds ran out of time, the Lagrangian minimised from the center (`_final_bound`; the rounds price with one
    # multiplier, FILTER_SHARES: 10,000 x 100, 126,645 at the center against 85,907 with all).
    closed, upper = bounds.bound(mu, lam, NU_SHARES)
    # Stalled rounds leave the LP near its optimum, where the closed form may be close already (racks3 2,000 x 144:
    # 10.8 s of minimising for 0.04 %); where it is not, it is minimised (mixed 2,000 x 192: 22,293 at the last
    # duals against a plan of 5,871).
    loose = closed > (1.0 + gap) * stats.lp_value
    if (not (stats.converged or stats.early_stop or stats.stalled) or (stats.stalled and loose)) and (
        controls.final_bound > 0 and center is not None
    ):
        # The last duals may be the better point where the LP is near its optimum (racks 5,000 x 64) or far off
        # (10,000 x 100: 159,969 against 92,812 at the center): the lesser of the two is refined.
        found = _final_bound(data, master, bounds, center, best()[1], budget.share(controls.final_bound), stats)
        if found[2] < closed:
            mu, lam, closed, upper = found
    stats.bound = min(stats.bound, closed)
    on_bound(closed)
    # The LP rounded (its columns taken greedily by LP value, must-run jobs first; construct places the jobs left
    # out), then re-placed along the prices: a plan near the LP's value in about a second, where the integer
    # master over thousands of jobs found nothing better than the first plan in its time (10,000 x 100: 33,759
    # against an LP of 58,817).
    level_prices = master.level_prices(*duals[1:])
    rounded = master.rounded()
    if rounded is not None and not budget.expired():
        rounded = construct(data, level_prices, start=rounded) or None  # the jobs it left out, must-run ones first
    if rounded is not None:
        consider(rounded)
        if not budget.expired():
            consider(improve(data, rounded, level_prices))
    log.debug("rounded plan: %s", None if rounded is None else f"{best()[1]:.3f}")
    # The first plan re-placed along the master's prices: a plan even when the rounding finds none. Second, since
    # at 10,000 jobs on a loaded machine each of these takes 5-10 s.
    if rounded is None and not budget.expired():
        consider(improve(data, best()[0], level_prices))
    # Refined where the closed form is least (`refined_bound` orders the jobs by upper - sigma: any sigma is valid).
    refined = bounds.refined_bound(sigma, mu, lam, upper, deadline=budget.share(REFINE_SHARE).deadline)
    stats.bound = min(stats.bound, refined)
    on_bound(refined)
    stats.pricing_s = time.monotonic() - started
    # The LP's fractional columns are mostly large multi-device jobs, and the LP's own columns leave the integer
    # master little room to pack them: their smaller versions join the master over the fractional jobs and the
    # one over every column (`ColumnMaster.shrunk`), not the neighbourhoods of the LP, whose first stage they
    # kept from its optimum (racks3 2,000 x 144 seed 1: 31 s, stopped, against 0.7 s without them).
    before = len(master.columns)
    if controls.shrink:
        stats.shrunk = master.add(master.shrunk(np.flatnonzero(master.fractional())))
    shrunk = range(before, before + stats.shrunk)
    log.debug("shrunk columns: %d", stats.shrunk)
    # The integer master's own gap is measured against its LP: stop it where the plan is within `gap` of our bound.
    mip_gap = max(MIN_MASTER_GAP, 0.5 * ((1.0 + gap) * stats.lp_value / stats.bound - 1.0))

    def open_gap() -> bool:
        return stats.bound - best()[1] > gap * abs(best()[1]) and not budget.expired()

    if rounded is not None and open_gap():
        # The jobs the LP holds whole stay as they are; HiGHS (presolve on) decides the few fractional jobs and
        # those with a column near the LP: a MILP of a few hundred columns, not of every job's.
        # Only those the rounded plan kept too: the rounded plan is then a solution (its warm start), where fixing
        # every integral column left no room for a fractional must-run job (racks3 2,000 x 144: infeasible).
        # (solve_mip adds the rounded plan's columns the master lacks: they are outside the LP's masks.)
        integral = master.integral()
        in_plan = np.zeros(len(integral), dtype=bool)
        for key in master.columns_in(rounded):
            at = master.index.get(key)
            if at is not None and at < len(integral):
                in_plan[at] = True
        integral &= in_plan
        owner = np.asarray(master.column_job[: len(integral)], dtype=np.int64)
        whole = np.zeros(master.jobs, dtype=bool)
        whole[owner[integral]] = True
        keep = master.near_lp(NEAR_LP_SHARES[0]) & ~whole[owner]
        result = master.solve_mip(
            budget.share(FIXED_SHARE).deadline, mip_gap, rounded, consider, threads, keep=keep, fix=integral
        )
        log.debug("master MILP over the LP's fractional jobs: %s", result)
    def widen(shares: tuple[float | None, ...], time_share: float = 1.0) -> bool:
        """The integer master over each neighbourhood in turn, each within `time_share` of the time left; True
        while each was solved to its optimum."""
        for share in shares:
            if not open_gap():
                return False
            near = None if share is None else _without(master.near_lp(share), shrunk)
            deadline = budget.share(time_share).deadline
            result = master.solve_mip(deadline, mip_gap, best()[0], consider, threads, keep=near)
            log.debug("master MILP (%s columns): %s", "all" if near is None else int(near.sum()), result)
            if result is None or result.outcome is not Outcome.optimal:
                return False
        return True

    stages = (*NEAR_LP_SHARES, None)
    settled = stats.converged or stats.early_stop or stats.stalled
    ahead = NEIGHBOURHOODS_FIRST if settled else len(stages)
    widened = widen(stages[:ahead], FIRST_STAGES_SHARE if settled else 1.0)
    if open_gap():
        searched = search_blocks(master, best, budget.deadline, consider, open_gap, threads)
        stats.block_steps, stats.block_gain = searched.steps, searched.value - searched.start_value
        log.debug("block search: %d steps, %d improved, %.3f -> %.3f", searched.steps, searched.improved,
                  searched.start_value, searched.value)
    if widened:
        widen(stages[ahead:])
    stats.mip_s = time.monotonic() - started - stats.pricing_s
    return stats


def _without(near: np.ndarray, shrunk: range) -> np.ndarray:
    """A neighbourhood of the LP (over the columns it solved) over every column now: the columns added since
    are in it (as `ColumnMaster.solve_mip` takes them), except the `shrunk` ones."""
    keep = np.ones(max(len(near), shrunk.stop), dtype=bool)
    keep[: len(near)] = near
    keep[shrunk.start: shrunk.stop] = False
    return keep


def _final_bound(
    data: ModelData, master: ColumnMaster, bounds: JobBounds, center: Center, target: float, budget: TimeBudget,
    stats: ColumnStats,
) -> tuple[np.ndarray, np.ndarray, float, np.ndarray]:
    """The Lagrangian D(mu, lambda) minimised from the stability center (optsched.solve.bound's cutting planes,
    with the cheap closed form, FILTER_SHARES, towards `target`, the best plan's value) until `budget`; returns
    the prices found, their closed-form bound with every multiplier (NU_SHARES) and its per-job parts."""
    dual = Lagrangian(data, relax=master.relax, start=(center.mu, center.lam), shares=FILTER_SHARES)
    dual.run(budget.deadline, target)
    stats.final_evaluations = len(dual.cuts)
    mu, lam = dual.multipliers()
    found, upper = bounds.bound(mu, lam, NU_SHARES)
    log.debug("final bound: %.3f (center %.3f), %d evaluations", found, center.bound, len(dual.cuts))
    return mu, lam, found, upper


def _round(
    pricing: Pricing, bounds: JobBounds, controls: Controls, enough: int | None, center: Center | None,
    sigma: np.ndarray, mu: np.ndarray, lam: np.ndarray, stats: ColumnStats,
) -> tuple[list[tuple[int, Column]], Center]:
    """One round's pricing at the LP duals (sigma, mu, lambda): at the smoothed prices first (Wentges), keeping
    the columns that improve at the LP's; where none does (a mis-price), at the LP's own. Every price point
    priced is also a bound, and the center moves to it when that bound is less. Returns the new columns and
    the center."""
    smooth = center is not None and controls.smoothing > 0
    point = center.towards(controls.smoothing, mu, lam) if smooth and center is not None else (mu, lam)
    bound, upper = bounds.bound(*point)
    center = Center(bound, *point) if center is None else center.better(bound, *point)
    new = pricing.price(sigma, *point, upper, enough)
    if not smooth:
        return new, center
    new = pricing.improving(new, sigma, mu, lam)
    if new:
        return new, center
    stats.misprices += 1
    bound, upper = bounds.bound(mu, lam)
    return pricing.price(sigma, mu, lam, upper, enough), center.better(bound, mu, lam)
