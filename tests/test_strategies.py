"""The strategy is chosen in one place from SolveOptions (style rule 18); TimeBudget hands out shares of the time
left; the IncumbentTracker keeps only better feasible plans and tighter bounds."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

import optsched
from optsched import SolveOptions, Status, Workload
from optsched.model.data import ModelData
from optsched.model.objectives import OBJECTIVES
from optsched.solve.budget import TimeBudget
from optsched.solve.construct import construct
from optsched.solve.decompose import option_count
from optsched.solve.incumbent import IncumbentTracker
from optsched.solve.options import STRATEGY_NAMES
from optsched.solve.planner import solve_workload
from optsched.solve.strategies import (
    STRATEGIES,
    ColumnGeneration,
    DirectMilp,
    HeuristicOnly,
    Parts,
    choose_strategy,
)
from optsched.solve.strategies.choose import columns_from
from optsched.testing.instances import generate, generate_racks
from optsched.verify.placement import verify

ROOT = Path(__file__).resolve().parents[1]

RACKS = ModelData(generate_racks("M", 0))
PLAIN = ModelData(generate("M", 0))
MIN_POWER = ModelData(generate_racks("M", 0).model_copy(update={"objective": "min_power"}))


def chosen(data: ModelData, first_plan: bool = True, seconds: float = 60.0, **fields) -> type:
    strategy = choose_strategy(
        data, SolveOptions(**fields), has_first_plan=first_plan, budget=TimeBudget.of(seconds),
        solve_part=solve_workload,
    )
    return type(strategy)


def test_every_strategy_name_but_auto_is_registered_once():
    assert set(STRATEGIES) == set(STRATEGY_NAMES) - {"auto"}
    assert all(cls.name == name for name, cls in STRATEGIES.items())


def test_auto_picks_by_the_option_thresholds():
    n = option_count(PLAIN)
    assert chosen(PLAIN) is DirectMilp  # plain M is below direct_max_options
    assert chosen(PLAIN, direct_max_options=n - 1) is ColumnGeneration
    assert chosen(PLAIN, direct_max_options=n - 1, column_max_options=n - 1) is Parts
    assert chosen(PLAIN, direct_max_options=n) is DirectMilp
    # min_power has no column generation: above the threshold it is split into parts.
    assert chosen(MIN_POWER, direct_max_options=0) is Parts
    # Too little time to build the model: the first plan re-placed, no model.
    assert chosen(PLAIN, seconds=1e-6) is HeuristicOnly


def test_columns_take_over_from_their_threshold_lower_with_per_domain_budgets():
    """Racks M (4 budgeted domains, about 12,000 options) goes to columns, plain M (2 domains, as many options) to
    one MILP, as measured side by side (SolveOptions); min_power, which has no columns, stays with one MILP."""
    racks, plain = option_count(RACKS), option_count(PLAIN)
    assert abs(racks - plain) < 0.1 * plain
    assert columns_from(RACKS, SolveOptions()) == 10_000 and columns_from(PLAIN, SolveOptions()) == 30_000
    assert chosen(RACKS) is ColumnGeneration and chosen(PLAIN) is DirectMilp and chosen(MIN_POWER) is DirectMilp
    assert chosen(RACKS, column_min_options_linked=racks + 1) is DirectMilp
    assert chosen(PLAIN, column_min_options=plain) is ColumnGeneration
    assert chosen(RACKS, column_min_options_linked=racks, column_max_options=racks - 1) is DirectMilp
    # The night planner's event workloads are far below either threshold, and carry rows of their own (its
    # lookahead, extra_functionality), which only the one MILP takes, whatever the size.
    assert chosen(ModelData(RACKS.workload.model_copy(update={"jobs": RACKS.workload.jobs[:2]}))) is DirectMilp
    assert chosen(RACKS, extra_functionality=lambda builder, data: None) is DirectMilp


def test_a_forced_strategy_is_used_where_it_applies_and_auto_decides_where_not():
    assert chosen(RACKS, strategy="columns") is ColumnGeneration
    assert chosen(RACKS, strategy="parts") is Parts
    assert chosen(RACKS, strategy="heuristic") is HeuristicOnly
    assert chosen(RACKS, strategy="direct", direct_max_options=0) is DirectMilp
    # No column generation for min_power, no split without a first plan or on the Pyomo backend.
    assert chosen(MIN_POWER, strategy="columns") is DirectMilp
    assert chosen(RACKS, first_plan=False, strategy="parts", direct_max_options=0) is DirectMilp
    assert chosen(RACKS, strategy="columns", backend="pyomo") is DirectMilp


def test_options_reject_unknown_strategies_and_bad_thresholds():
    for bad in ({"strategy": "greedy"}, {"direct_max_options": -1}, {"part_workers": 0}, {"part_options": 0}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            SolveOptions(**bad)  # type: ignore[arg-type]


def test_the_heuristic_strategy_gives_a_verified_plan_with_a_bound():
    w = generate_racks("M", 1)
    plan = optsched.plan(w, options=SolveOptions(strategy="heuristic", time_limit_s=10))
    assert verify(w, plan) == []
    assert plan.status in (Status.time_limit, Status.optimal)
    assert plan.bound is not None and plan.bound >= plan.objective
    assert "bound" in plan.timings and plan.timings["highs"] == 0.0


def test_budget_shares_the_time_left_and_never_passes_its_deadline():
    budget = TimeBudget.of(10.0)
    half = budget.share(0.5)
    assert 4.0 < half.remaining() <= 5.0
    assert budget.share(0.0, at_least=1.0).remaining() == pytest.approx(1.0, abs=0.1)
    assert budget.share(0.0, at_least=20.0).deadline == budget.deadline
    assert budget.keep_back(3.0).deadline == pytest.approx(budget.deadline - 3.0)
    spent = TimeBudget(time.monotonic() - 1.0)
    assert spent.expired() and spent.remaining() == 0.0 and spent.share(0.5).expired()


def test_tracker_keeps_better_feasible_plans_and_tighter_bounds_and_reports_each():
    data = RACKS
    heard: list[tuple[float | None, float | None]] = []
    tracker = IncumbentTracker(
        data, OBJECTIVES["weighted_speedup"], 0.01, started=time.monotonic(),
        progress=lambda _s, value, bound: heard.append((value, bound)),
    )
    first = construct(data)
    tracker.consider(first)
    assert tracker.best is first and tracker.best_value is not None
    tracker.consider({})  # feasible only without must-run jobs, and worse anyway
    assert tracker.best is first
    tracker.consider({key: n + 10**6 for key, n in first.items()})  # over capacity
    assert tracker.best is first
    tracker.improve_bound(2 * tracker.best_value)
    tracker.improve_bound(3 * tracker.best_value)  # looser: ignored
    assert tracker.bound == 2 * tracker.best_value and not tracker.within_gap()
    tracker.improve_bound(tracker.best_value * 1.001)
    assert tracker.within_gap()
    assert len(heard) == 3 and heard[-1] == (tracker.best_value, tracker.bound)


def test_parts_of_a_split_workload_are_not_split_again():
    # min_power is never priced by columns, so with direct_max_options=0 it is split into parts; each part is one
    # MILP. Left to "auto" with the caller's thresholds a part was split again, and a part of one job forever: a
    # chain of forked pools that hung the suite at exit.
    document = json.loads((ROOT / "models/workloads/tiny.json").read_text())
    w = Workload.load({**document, "objective": "min_power"})
    started = time.monotonic()
    result = optsched.plan(w, time_limit_s=20, options=SolveOptions(direct_max_options=0, part_workers=2))
    assert time.monotonic() - started < 120, "a part was split again"
    assert verify(w, result) == []
    assert result.status in (Status.optimal, Status.time_limit)
    assert "rounds" in result.timings, result.timings  # the parts strategy ran
    # Each part is one MILP whatever the caller's thresholds (a part of MIN_POWER, whole, stands in for any part).
    parts = chosen(MIN_POWER, direct_max_options=0)
    assert parts is Parts
    sub = Parts.create(SolveOptions(direct_max_options=0), solve_workload)
    assert isinstance(sub, Parts)
    again = choose_strategy(
        MIN_POWER, sub.sub_options, has_first_plan=True, budget=TimeBudget.of(60.0), solve_part=solve_workload
    )
    assert isinstance(again, DirectMilp)
