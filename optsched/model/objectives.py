"""Objectives, registered in one place; each has one signature: add(builder, data, extra) -> tie-break weight
(`extra`: the linear terms of an `ExtraObjective`, added to the registered objective as they are)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

from optsched.model.expressions import idle_draw

if TYPE_CHECKING:
    from optsched.model.builder import ModelBuilder as Builder
    from optsched.model.builder import Term
    from optsched.model.data import ModelData

# The tie-break term may move the primary objective by at most this share of the requested gap,
# so a tie is broken without trading away more than the tolerance the user already accepted.
TIE_BREAK_SHARE = 0.1


@dataclass(frozen=True)
class Objective:
    name: str
    sense: Literal["max", "min"]
    admit_all: bool  # every job must be admitted (and so meet its deadline)
    add: Callable[[Builder, ModelData, Sequence[Term]], float]  # sets the objective, returns the tie-break weight
    value: Callable[[float, float], float]  # exact value from (weighted speedup, power in W)
    description: str


OBJECTIVES: dict[str, Objective] = {}


@dataclass(frozen=True)
class ExtraObjective:
    """Terms a caller adds to the registered objective (e.g. a cost of moving running jobs, optsched.replan).

    `add(b, data)` adds its own variables and rows and returns linear terms in the objective's units and sense
    (a cost is negative under max, positive under min); `value(data, counts)` is their exact value at an
    integer allocation {(job, group, level): devices}, so that plans are ranked on the same total.
    """

    add: Callable[[Builder, ModelData], list[Term]]
    value: Callable[[ModelData, Mapping[tuple[int, int, int], int]], float]


def register(objective: Objective) -> Objective:
    OBJECTIVES[objective.name] = objective
    return objective


def _speedup_entries(data: ModelData) -> tuple[str, np.ndarray, np.ndarray]:
    """sum_j w_j S_j as (block, positions, coefficients)."""
    return "S", np.arange(len(data.jobs)), np.array([job.objective_weight for job in data.jobs], dtype=np.float64)


def _power_entries(data: ModelData) -> tuple[float, np.ndarray, np.ndarray]:
    """The fleet's draw as (idle W, positions of n, W above idle per device): `power_terms(data)` as arrays."""
    o = data.option_arrays
    return idle_draw(data), np.arange(len(o.draw)), o.draw


def _tie_break_weight(data: ModelData, scale: float, spread: float) -> float:
    gap = max(data.workload.options.mip_gap, 1e-6)
    return TIE_BREAK_SHARE * gap * scale / max(spread, 1e-9)


def _smallest_gain(data: ModelData) -> float:
    return min(
        (job.objective_weight * data.best_speedup(j) for j, job in enumerate(data.jobs) if data.options_of_job[j]),
        default=1.0,
    )


def _most_speedup(data: ModelData) -> float:
    return sum(job.objective_weight * data.best_speedup(j) for j, job in enumerate(data.jobs))


def _add_weighted_speedup(b: Builder, data: ModelData, extra: Sequence[Term] = ()) -> float:
    """max sum_j w_j S_j - eps * P + extra  (eps so small that power only breaks ties)."""
    eps = _tie_break_weight(data, _smallest_gain(data), data.peak_power_w)
    speedup, (idle, positions, draw) = _speedup_entries(data), _power_entries(data)
    b.set_objective(list(extra), -eps * idle, maximise=True, entries=[speedup, ("n", positions, -eps * draw)])
    return eps


def _add_min_power(b: Builder, data: ModelData, extra: Sequence[Term] = ()) -> float:
    """min P - eps * sum_j w_j S_j + extra  (W; every job admitted; speedup only breaks ties)."""
    cheapest = min((o.cap_w for o in data.options), default=1.0)
    eps = _tie_break_weight(data, max(data.idle_power_w, cheapest, 1.0), _most_speedup(data))
    idle, positions, draw = _power_entries(data)
    name, jobs, weights = _speedup_entries(data)
    b.set_objective(list(extra), idle, maximise=False, entries=[("n", positions, draw), (name, jobs, -eps * weights)])
    return eps


register(
    Objective(
        name="weighted_speedup",
        sense="max",
        admit_all=False,
        add=_add_weighted_speedup,
        value=lambda weighted_speedup, power_w: weighted_speedup,
        description="Maximise the priority-weighted sum of Amdahl speedups; ties go to lower total power.",
    )
)
register(
    Objective(
        name="min_power",
        sense="min",
        admit_all=True,
        add=_add_min_power,
        value=lambda weighted_speedup, power_w: power_w,
        description="Admit every job and meet every deadline at the least total power; ties go to more speedup.",
    )
)
