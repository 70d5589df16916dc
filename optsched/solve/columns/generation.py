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
from optsched.solve.bound import NU_SHARES
from optsched.solve.budget import TimeBudget
from optsched.solve.columns.bounds import JobBounds
from optsched.solve.columns.master import ColumnMaster, Consider
from optsched.solve.columns.pricing import Pricing
from optsched.solve.construct import improve
from optsched.solve.extract import Counts

log = logging.getLogger(__name__)

# Jobs in the sample whose master prices the seed columns, and the share of column generation's time it may take.
SAMPLE_JOBS = 500
SAMPLE_SHARE = 0.2
# Share of the time that column generation may take before the integer master.
COLUMNS_SHARE = 0.65
# Share of the time left after it that refining the bound may take.
REFINE_SHARE = 0.2
# Share of the time left after it that the integer master over the columns near the LP may take.
RESTRICTED_SHARE = 0.6
# Columns within this share of their value from a zero reduced profit join the restricted integer master.
NEAR_LP_SHARE = 0.01
# The least relative gap asked of the integer master.
MIN_MASTER_GAP = 1e-4


@dataclass
class ColumnStats:
    """What column generation did, for the plan's timings and the benchmark."""

    rounds: int = 0
    columns: int = 0
    converged: bool = False  # pricing found no column with a positive reduced profit
    lp_value: float = math.nan
    bound: float = math.inf  # the least bound found (refined at the last duals)
    pricing_s: float = 0.0
    mip_s: float = 0.0


def sample_prices(
    data: ModelData, first: Counts, budget: TimeBudget, seed: int = 0
) -> tuple[np.ndarray, np.ndarray] | None:
    """Device and watt prices from the master of a random sample of SAMPLE_JOBS jobs with that share of the
    capacities and budgets (POP's observation: a random share of the jobs on the same share of the resources
    prices them much as the whole does), or None for a workload that small."""
    jobs = len(data.jobs)
    if jobs < 2 * SAMPLE_JOBS:
        return None
    members = np.random.default_rng(seed).choice(jobs, SAMPLE_JOBS, replace=False)
    sample = ColumnMaster(data, members, scale=SAMPLE_JOBS / jobs)
    pricing, bounds = Pricing(sample), JobBounds(sample)
    sample.add_counts(first)
    prices = None
    while not budget.expired():
        solved = sample.solve_lp(budget.deadline)
        if solved is None:
            break
        _, sigma, mu, lam = solved
        prices = (mu, lam)
        if not sample.add(pricing.price(sigma, mu, lam, bounds.bound(mu, lam)[1])):
            break
    return prices


def solve_by_columns(
    data: ModelData, *, best: Callable[[], tuple[Counts, float]], budget: TimeBudget, gap: float,
    consider: Consider, on_bound: Callable[[float], None], threads: int | None = None,
) -> ColumnStats:
    """Column generation for COLUMNS_SHARE of the time (or until pricing finds nothing), the bound refined at the
    last duals, then the integer master: first over the columns near the LP optimum, then over all of them.
    `best()` gives the best plan so far and its value (the master starts from it); every integer plan goes to
    `consider`, every bound to `on_bound`."""
    started = time.monotonic()
    generation = budget.share(COLUMNS_SHARE)
    sampling = generation.share(SAMPLE_SHARE)
    stats = ColumnStats()
    master = ColumnMaster(data)
    pricing, bounds = Pricing(master), JobBounds(master)
    first, _ = best()
    master.add_counts(first)
    prices = sample_prices(data, first, sampling)
    if prices is not None:
        pricing.seed(*prices)
    duals = None
    while not generation.expired():
        solved = master.solve_lp(generation.deadline)
        if solved is None:
            break
        stats.lp_value, sigma, mu, lam = solved
        stats.rounds += 1
        bound, upper = bounds.bound(mu, lam)
        duals = (sigma, mu, lam, upper)
        stats.bound = min(stats.bound, bound)
        on_bound(bound)
        new = []
        if prices is not None:
            # Priced between the LP's duals and the sample's (which are near where the LP's end up), the first
            # rounds ask for the allocations the optimum uses rather than every job's largest one.
            new = pricing.improving(pricing.smoothed(sigma, mu, lam, upper, *prices), sigma, mu, lam)
        if not new:
            new = pricing.price(sigma, mu, lam, upper)
        log.debug(
            "column generation round %d: LP %.3f, bound %.3f, %d new columns", stats.rounds, stats.lp_value, bound,
            len(new),
        )
        if not master.add(new):
            stats.converged = True
            break
    stats.columns = len(master.columns)
    if duals is None:
        stats.pricing_s = time.monotonic() - started
        return stats
    sigma, mu, lam, _ = duals
    # The first plan re-placed along the master's prices: a plan in about a second even when the integer master
    # below finds nothing in its time (10,000 jobs and more).
    consider(improve(data, best()[0], master.level_prices(mu, lam)))
    # refined <= the closed form at these prices, with every multiplier: no need to keep that one too.
    _, upper = bounds.bound(mu, lam, NU_SHARES)
    refined = bounds.refined_bound(sigma, mu, lam, upper, deadline=budget.share(REFINE_SHARE).deadline)
    stats.bound = min(stats.bound, refined)
    on_bound(refined)
    stats.pricing_s = time.monotonic() - started
    # The integer master's own gap is measured against its LP: stop it where the plan is within `gap` of our bound.
    mip_gap = max(MIN_MASTER_GAP, 0.5 * ((1.0 + gap) * stats.lp_value / stats.bound - 1.0))
    restricted = budget.share(RESTRICTED_SHARE)
    result = master.solve_mip(
        restricted.deadline, mip_gap, best()[0], consider, threads, keep=master.near_lp(NEAR_LP_SHARE)
    )
    log.debug("restricted master MILP: %s", result)
    if (stats.bound - best()[1]) > gap * abs(best()[1]) and not budget.expired():
        result = master.solve_mip(budget.deadline, mip_gap, best()[0], consider, threads)
        log.debug("master MILP: %s", result)
    stats.mip_s = time.monotonic() - started - stats.pricing_s
    return stats
