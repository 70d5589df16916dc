"""How to solve a workload, as one typed object handed down the layers (the workload says what to solve).

`plan()`, the frontier, the night planner, `replan()`, the decomposition and the service kinds all pass one
`SolveOptions` to `solve_workload` instead of a row of loose keyword arguments.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from optsched.model.constraints import ExtraFunctionality
from optsched.model.objectives import ExtraObjective
from optsched.schema.plan import Plan

# progress(seconds since the call, best objective or None, bound or None)
Progress = Callable[[float, float | None, float | None], None]
OnIncumbent = Callable[[Plan], None]
# job id -> {(device group id, cap_w): devices}, e.g. a baseline's or the current plan's allocations
WarmStart = Mapping[str, Mapping[tuple[str, float], int]]
BACKENDS = ("highs", "pyomo")


@dataclass(frozen=True)
class SolveOptions:
    """`time_limit_s` and `mip_gap` override the workload's own options when set; `threads` caps HiGHS's threads.

    `backend` "highs" hands the matrix straight to highspy, "pyomo" goes through Pyomo's persistent interface
    (both build the same rows). `extra_functionality(builder, data)` adds rows of the caller's own;
    `extra_objective` adds terms to the objective (re-planning's move cost). `progress` is called whenever the
    best plan or the bound improves; `on_incumbent(plan)` receives each improved plan while solving.
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

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, not {self.backend!r}")
        if self.time_limit_s is not None and not self.time_limit_s > 0:
            raise ValueError(f"time_limit_s must be > 0, not {self.time_limit_s!r}")
        if self.mip_gap is not None and not 0 <= self.mip_gap <= 1:
            raise ValueError(f"mip_gap must be in [0, 1], not {self.mip_gap!r}")

    def replace(self, **changes: Any) -> SolveOptions:
        return dataclasses.replace(self, **changes)
