"""How to solve a workload, as one typed object handed down the layers (the workload says what to solve).

`plan()`, the frontier, the night planner, `replan()`, the decomposition and the service kinds all pass one
`SolveOptions` to `solve_workload` instead of a row of loose keyword arguments.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from optsched.model.constraints import ExtraFunctionality
from optsched.model.objectives import ExtraObjective
from optsched.schema.plan import Plan

# progress(seconds since the call, best objective or None, bound or None)
Progress = Callable[[float, float | None, float | None], None]
OnIncumbent = Callable[[Plan], None]
# job id -> {(device group id, cap_w): devices}, e.g. a baseline's or the current plan's allocations
WarmStart = Mapping[str, Mapping[tuple[str, float], int]]
BACKENDS = ("highs", "pyomo")
StrategyName = Literal["auto", "direct", "columns", "parts", "heuristic"]
STRATEGY_NAMES: tuple[StrategyName, ...] = get_args(StrategyName)


@dataclass(frozen=True)
class SolveOptions:
    """`time_limit_s` and `mip_gap` override the workload's own options when set; `threads` caps HiGHS's threads.

    `backend` "highs" hands the matrix straight to highspy, "pyomo" goes through Pyomo's persistent interface
    (both build the same rows). `extra_functionality(builder, data)` adds rows of the caller's own;
    `extra_objective` adds terms to the objective (re-planning's move cost). `progress` is called whenever the
    best plan or the bound improves; `on_incumbent(plan)` receives each improved plan while solving.

    `strategy` says how the search runs (optsched.solve.strategies.choose_strategy decides from these fields):
    "auto" picks by size, "direct" the one MILP, "columns" column generation, "parts" the decomposition,
    "heuristic" the first plan re-placed along Lagrangian prices. A forced strategy that cannot apply to the
    workload (columns for min_power, any but direct with extra rows or terms) leaves the choice to "auto".
    Under "auto": above `direct_max_options` placement options a plain workload on HiGHS is split, by column
    generation for weighted_speedup up to `column_max_options` options (0: never), by parts otherwise; the
    parts aim at `part_options` options each and run in `part_workers` processes; column generation prices and
    bounds its rounds on `pricing_threads` threads, or prices them in `pricing_workers` processes, with
    `pricing_hosts` hosts per job in its single-level family (0: every one), and with
    `shrink_columns` gives its integer master the LP's fractional columns with fewer devices too. Where column
    generation applies it already takes over from `column_min_options` options (`column_min_options_linked` when
    power domains carry budgets of their own).
    """

    time_limit_s: float | None = None
    mip_gap: float | None = None
    threads: int | None = None
    backend: str = "highs"
    warm_start: WarmStart | None = None
    extra_functionality: ExtraFunctionality | None = None
    extra_objective: ExtraObjective | None = None
    progress: Progress | None = None
    on_incumbent: OnIncumbent | None = None
    strategy: StrategyName = "auto"
    # The measured crossover of one MILP against the parts on 2 cores (bench/results/planner-large.md).
    direct_max_options: int = 150_000
    # From these many options on, where column generation applies (weighted_speedup on HiGHS), it replaces the one
    # MILP. Side by side on 2 cores (30 s, load 6-9; docs/benchmarks/planner-large.md): plain 200 x 16 (12,000
    # options): the one MILP proves 1 % in 9-11 s, columns in 18-22 s; plain 500 x 32 (59,000): the one MILP ends
    # 347 % from its bound, columns 12 %; 1,000 x 32 (118,000): 535-1,064 % against 0.5-1.0 %.
    column_min_options: int = 30_000
    # The same where LINKED_DOMAINS or more power domains have budgets of their own (racks): racks 200 x 16
    # (11,800-12,600 options): the one MILP ends 12-83 % from its bound at 30 s, columns prove 1 % in 13-16 s; the
    # night planner's event workloads (160-264 options) stay with one MILP (0.25-0.57 % in under 0.2 s).
    column_min_options_linked: int = 10_000
    # Above this the parts take the workload. Columns beat the parts at every size measured: racks 20,000 x 128
    # (9.7 million options), 60 s at load 1-3, plan 116,064 and gap 14 % against the parts' 69,851 and 482 %
    # (docs/benchmarks/planner-large.md, "2026-12-04 late"); 16,000,000 keeps a margin above it, not a measured edge.
    column_max_options: int = 16_000_000
    # An M-sized MILP proves 1 % in about a second (bench/results/planner.md).
    part_options: int = 15_000
    part_workers: int = 2
    # One: on 2 cores shared at load 13, a full round of racks3 2,000 x 144 took 0.92-1.14 s in one process,
    # 0.72-0.97 s in two and 0.77-0.94 s in four; of racks 10,000 x 100 2.5-2.9 s in one and 2.9-3.4 s in two
    # (the duals and columns passed between processes cost more than they save; bench/results/planner-large.md).
    pricing_workers: int = 1
    # Threads pricing and bounding the blocks of a round in this process: on 2 cores, a pricing round of racks
    # 10,000 x 100 took 0.47 s on two threads against 0.75 s on one, a bound 0.17 s against 0.30 s, the same columns
    # and bound; 1.2-1.7 times the rounds in 60 s (docs/benchmarks/planner-large.md).
    pricing_threads: int = 2
    # The LP's fractional columns with fewer devices join column generation's integer master (`Controls.shrink`):
    # racks3 5,000 x 192 seed 0 in 60 s, 1.87 % against 3.02 % (docs/benchmarks/planner-large.md).
    shrink_columns: bool = True
    # Hosts per job that column generation's single-level pricing pairs with every extra level (0: every frontier
    # level; `Controls.hosts`, HOSTS_PRICED in optsched/solve/columns/pricing.py): mixed 2,000 x 192 in 60 s, a
    # proven 0.81-0.90 % against 6.4-7.2 % with every host (docs/benchmarks/planner-large.md).
    pricing_hosts: int = 24

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGY_NAMES:
            raise ValueError(f"strategy must be one of {STRATEGY_NAMES}, not {self.strategy!r}")
        for name in (
            "direct_max_options", "column_min_options", "column_min_options_linked", "column_max_options",
            "pricing_hosts",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, not {getattr(self, name)!r}")
        for name in ("part_options", "part_workers", "pricing_workers", "pricing_threads"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, not {getattr(self, name)!r}")
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, not {self.backend!r}")
        if self.time_limit_s is not None and not self.time_limit_s > 0:
            raise ValueError(f"time_limit_s must be > 0, not {self.time_limit_s!r}")
        if self.mip_gap is not None and not 0 <= self.mip_gap <= 1:
            raise ValueError(f"mip_gap must be in [0, 1], not {self.mip_gap!r}")

    def replace(self, **changes: Any) -> SolveOptions:
        return dataclasses.replace(self, **changes)
