"""Objectives, registered in one place; each has one signature: add(m, data) sets m.objective."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Literal

import pyomo.environ as pyo

if TYPE_CHECKING:
    from optsched.data import ModelData

# The tie-break term may move the primary objective by at most this share of the requested gap,
# so a tie is broken without trading away more than the tolerance the user already accepted.
TIE_BREAK_SHARE = 0.1


@dataclass(frozen=True)
class Objective:
    name: str
    sense: Literal["max", "min"]
    admit_all: bool  # every job must be admitted (and so meet its deadline)
    add: Callable[[pyo.ConcreteModel, "ModelData"], None]
    value: Callable[[float, float], float]  # exact value from (weighted speedup, power in W)
    description: str


OBJECTIVES: dict[str, Objective] = {}


def register(objective: Objective) -> Objective:
    OBJECTIVES[objective.name] = objective
    return objective


def _weighted_speedup(m: pyo.ConcreteModel, data: "ModelData"):
    return sum(job.objective_weight * m.S[j] for j, job in enumerate(data.jobs))


def _tie_break_weight(data: "ModelData", scale: float, spread: float) -> float:
    gap = max(data.workload.options.mip_gap, 1e-6)
    return TIE_BREAK_SHARE * gap * scale / max(spread, 1e-9)


def _add_weighted_speedup(m: pyo.ConcreteModel, data: "ModelData") -> None:
    """max sum_j w_j S_j - eps * P  (eps so small that power only breaks ties)."""
    from optsched.model import power_expression

    smallest_gain = min(
        (job.objective_weight * data.best_speedup(j) for j, job in enumerate(data.jobs) if data.options_of_job[j]),
        default=1.0,
    )
    eps = _tie_break_weight(data, smallest_gain, data.peak_power_w)
    m.tie_break_weight = eps
    m.objective = pyo.Objective(expr=_weighted_speedup(m, data) - eps * power_expression(m, data), sense=pyo.maximize)


def _add_min_power(m: pyo.ConcreteModel, data: "ModelData") -> None:
    """min P - eps * sum_j w_j S_j  (W; every job admitted; speedup only breaks ties)."""
    from optsched.model import power_expression

    most_speedup = sum(job.objective_weight * data.best_speedup(j) for j, job in enumerate(data.jobs))
    eps = _tie_break_weight(data, max(data.idle_power_w, 1.0), most_speedup)
    m.tie_break_weight = eps
    m.objective = pyo.Objective(expr=power_expression(m, data) - eps * _weighted_speedup(m, data), sense=pyo.minimize)


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
