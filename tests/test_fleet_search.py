"""The integer master by blocks of the fleet (optsched.solve.columns.fleet_search) and the rounds' stall rule."""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import optsched.solve.columns.fleet_search as fleet_search
import optsched.solve.columns.generation as generation
from optsched import Status, Workload
from optsched.model.data import ModelData
from optsched.model.objectives import OBJECTIVES
from optsched.solve.columns import ColumnMaster, Controls, JobBounds, Pricing
from optsched.solve.construct import construct
from optsched.solve.extract import Counts, exact_speedups, extract, weighted
from optsched.solve.highs import Outcome
from optsched.testing.instances import generate_racks
from optsched.verify.placement import verify
from tests.oracle import tiny_case
from tests.support.columns import run_columns
from tests.support.factories import tiny_workloads


class Best:
    """The planner's incumbent as column generation sees it: every plan considered, the best kept."""

    def __init__(self, data: ModelData, first: Counts):
        self.data, self.plans = data, [first]
        self.counts, self.value = first, weighted(data, exact_speedups(data, first))

    def __call__(self) -> tuple[Counts, float]:
        return self.counts, self.value

    def consider(self, counts: Counts) -> None:
        self.plans.append(counts)
        value = weighted(self.data, exact_speedups(self.data, counts))
        if value > self.value:
            self.counts, self.value = counts, value


def _priced_master(w: Workload, rounds: int = 30) -> tuple[ModelData, ColumnMaster, Best]:
    """A master after up to `rounds` rounds of pricing from the first plan, as the loop leaves it."""
    data = ModelData(w)
    master = ColumnMaster(data)
    pricing, bounds = Pricing(master), JobBounds(master)
    best = Best(data, construct(data))
    master.add_counts(best.counts)
    for _ in range(rounds):
        solved = master.solve_lp(time.monotonic() + 10)
        assert solved is not None
        _, sigma, mu, lam = solved
        if not master.add(pricing.price(sigma, mu, lam, bounds.bound(mu, lam)[1])):
            break
    return data, master, best


def _searchable(w: Workload) -> tuple[ModelData, ColumnMaster, Best, np.ndarray, fleet_search._Columns]:
    """A priced master of `w`, its blocks and the search's view of its columns."""
    data, master, best = _priced_master(w)
    block = fleet_search.blocks_of(master)
    return data, master, best, block, fleet_search._Columns(master, block, int(block.max()) + 1)


def _verified(w: Workload, data: ModelData, plans: list[Counts]) -> None:
    objective = OBJECTIVES["weighted_speedup"]
    for counts in plans:
        plan = extract(data, objective, counts, Status.heuristic, None, (), time.monotonic(), 0)
        assert verify(w, plan) == []


def test_blocks_are_the_racks_and_groups_under_no_rack_are_their_own():
    w = generate_racks("M", 0)
    master = ColumnMaster(ModelData(w))
    block = fleet_search.blocks_of(master)
    domains = [d.domain for d in w.devices]
    for g in range(len(domains)):
        for h in range(len(domains)):
            assert (block[g] == block[h]) == (domains[g] == domains[h])
    # Without rack budgets only the fleet's budget is left, which covers every group: one block per group.
    bare = Workload.load({**w.model_dump(mode="json"), "power": {"budget_w": w.power.budget_w}})
    assert sorted(fleet_search.blocks_of(ColumnMaster(ModelData(bare)))) == list(range(len(domains)))


def test_a_step_keeps_every_job_outside_its_blocks_and_never_loses_value():
    w = generate_racks("M", 1)
    data, master, best, block, columns = _searchable(w)
    chosen = np.zeros(columns.blocks, dtype=bool)
    chosen[: columns.blocks // 2] = True
    start, value = best()
    outcome = columns.step(start, chosen, time.monotonic() + 20, best.consider, None)
    assert outcome is Outcome.optimal
    assert best.value >= value - 1e-9
    inside_groups = set(np.flatnonzero(chosen[block]).tolist())
    outside = {j for (j, g, _), n in start.items() if n > 0 and g not in inside_groups}
    for counts in best.plans[1:]:
        for j in outside:
            # A job with any device outside the freed blocks keeps its whole allocation.
            assert {k: n for k, n in counts.items() if k[0] == j} == {k: n for k, n in start.items() if k[0] == j}
    _verified(w, data, best.plans)


@pytest.mark.slow
def test_a_step_freeing_every_block_is_the_integer_master_over_every_column():
    w = generate_racks("M", 2)
    _, master, best, _, columns = _searchable(w)
    outcome = columns.step(best()[0], np.ones(columns.blocks, dtype=bool), time.monotonic() + 30, best.consider, None)
    assert outcome is Outcome.optimal
    whole = master.solve_mip(time.monotonic() + 30, 1e-6, best()[0], lambda counts: None)
    assert whole is not None and whole.outcome is Outcome.optimal
    assert best.value == pytest.approx(whole.incumbent, rel=2e-4)


@pytest.mark.slow
@given(tiny_workloads(max_jobs=5, max_groups=3, max_count=4))
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_the_search_finds_only_verified_plans_no_better_than_the_optimum(workload):
    case = tiny_case(workload)
    if case is None:
        return
    w, optimum = case
    data, master, best = _priced_master(w)
    stats = fleet_search.search_blocks(master, best, time.monotonic() + 1.0, best.consider, lambda: True)
    assert stats.value >= stats.start_value - 1e-9
    assert best.value <= optimum + 1e-6 * max(1.0, abs(optimum))
    _verified(w, data, best.plans)


@pytest.mark.slow
def test_the_search_ends_at_its_deadline_and_when_the_gap_closes():
    w = generate_racks("L", 0)
    _, master, best = _priced_master(w, rounds=10)
    started = time.monotonic()
    stats = fleet_search.search_blocks(master, best, started + 2.0, best.consider, lambda: True)
    # Real slack: a step ends by its deadline, plus HiGHS's own watchdog grace on a busy machine.
    assert time.monotonic() - started < 2.0 + 5.0
    assert stats.steps >= 1
    assert fleet_search.search_blocks(master, best, time.monotonic() + 30, best.consider, lambda: False).steps == 0


@pytest.mark.slow
def test_stalled_rounds_end_early_with_a_bound_that_still_holds(monkeypatch):
    w = generate_racks("M", 0)
    monkeypatch.setattr(generation, "STALL_SHARE", 10.0)  # any round rises by less than 10 x the LP: stalled
    _, stats, _, bounds, value = run_columns(w, Controls(stall_rounds=1), gap=0.05, seconds=6.0)
    assert stats.stalled and not stats.converged and stats.rounds == 2
    assert min(bounds) >= value - 1e-6 * value
