"""Objectives, registered in one place; each has one signature: add(builder, data, extra) -> tie-break weight
(`extra`: the linear terms of an `ExtraObjective`, added to the registered objective as they are), and one exact
value: value(data, speedups, power in W).

The fairness objectives (max_min_speedup, team_max_min) are two solves (optsched.solve.fairness): the first
maximises the fairness value z, the second, given `data.fairness_floor`, the weighted speedup among the plans that
keep z >= the floor; their rows are optsched.model.constraints.add_fairness (docs/guides/fairness.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

from optsched.model.expressions import idle_draw
from optsched.schema.tolerances import FAIRNESS_TOLERANCE

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
    # The exact value of a plan from (data, each job's exact speedup, power in W); -inf for a plan the solve
    # must not accept (a second fairness solve's plan below the floor).
    value: Callable[[ModelData, Sequence[float], float], float]
    description: str
    fair: bool = False  # normalised by the solo speedups, solved twice (optsched.solve.fairness)


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


def weighted_speedup(data: ModelData, speedups: Sequence[float]) -> float:
    """sum_j w_j S_j (w_j: priority weight x weight)."""
    return sum(job.objective_weight * s for job, s in zip(data.jobs, speedups, strict=True))


def fairness_terms(data: ModelData) -> list[tuple[str, list[tuple[int, float]], float]]:
    """The max-min's members as (key, [(job, coefficient of S_j)], target): the member's value is
    sum coefficient x S_j / target. max_min_speedup: one per job, coefficient 1 / S_j^solo, target w_j (the job's
    weight); team_max_min: one per team, coefficient 1 / S_j^solo for each of its jobs, target the team's share."""
    solo = data.normalisers
    if data.workload.objective == "team_max_min":
        members: dict[str, list[tuple[int, float]]] = {}
        for j, job in enumerate(data.jobs):
            members.setdefault(job.team_name, []).append((j, 1.0 / solo[j] if solo[j] > 0 else 0.0))
        shares = data.workload.team_shares()
        return [(team, terms, shares[team]) for team, terms in members.items()]
    return [(job.id, [(j, 1.0 / solo[j] if solo[j] > 0 else 0.0)], job.weight) for j, job in enumerate(data.jobs)]


def fairness_value(data: ModelData, speedups: Sequence[float]) -> float:
    """min over members of sum_j c_j S_j / target (dimensionless; 0 with no job)."""
    return min(
        (sum(c * speedups[j] for j, c in terms) / target for _, terms, target in fairness_terms(data)), default=0.0
    )


def fairness_upper_bound(data: ModelData) -> float:
    """No plan passes this: S_j <= S_j^solo, so each member's value is at most its jobs' count / target."""
    return min((len(terms) / target for _, terms, target in fairness_terms(data)), default=0.0)


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


def smallest_gain(data: ModelData) -> float:
    """The least w_j x best S_j over the jobs that can run (1 without any): the weighted speedup objective's
    tie-break scale: eps x the peak draw stays below TIE_BREAK_SHARE x the gap x any job's best w_j S_j."""
    return min(
        (job.objective_weight * data.best_speedup(j) for j, job in enumerate(data.jobs) if data.options_of_job[j]),
        default=1.0,
    )


def _most_speedup(data: ModelData) -> float:
    return sum(job.objective_weight * data.best_speedup(j) for j, job in enumerate(data.jobs))


def _add_weighted_speedup(b: Builder, data: ModelData, extra: Sequence[Term] = ()) -> float:
    """max sum_j w_j S_j - eps * P + extra  (eps so small that power only breaks ties)."""
    eps = _tie_break_weight(data, smallest_gain(data), data.peak_power_w)
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


def _add_fairness(b: Builder, data: ModelData, extra: Sequence[Term] = ()) -> float:
    """First solve: max z + extra (z <= every member's normalised speedup: add_fairness). Second solve
    (`data.fairness_floor` set): max sum_j w_j S_j - eps * P + extra, the floor kept by add_fairness's rows."""
    if data.fairness_floor is not None:
        return _add_weighted_speedup(b, data, extra)
    # No power tie-break: the second solve re-optimises among the plans this one proves fair.
    b.set_objective([("z", 0, 1.0), *extra], 0.0, maximise=True)
    return 0.0


def _fair_value(data: ModelData, speedups: Sequence[float], power_w: float) -> float:
    """The fairness value; in the second solve the weighted speedup, -inf below the floor."""
    fairness = fairness_value(data, speedups)
    if data.fairness_floor is None:
        return fairness
    # The floor comes from an exact value; a plan equal to it up to rounding keeps it.
    if fairness < data.fairness_floor * (1 - 1e-9) - 1e-12:
        return -math.inf
    return weighted_speedup(data, speedups)


register(
    Objective(
        name="weighted_speedup",
        sense="max",
        admit_all=False,
        add=_add_weighted_speedup,
        value=lambda data, speedups, power_w: weighted_speedup(data, speedups),
        description="Maximise the priority-weighted sum of Amdahl speedups; ties go to lower total power.",
    )
)
register(
    Objective(
        name="min_power",
        sense="min",
        admit_all=True,
        add=_add_min_power,
        value=lambda data, speedups, power_w: power_w,
        description="Admit every job and meet every deadline at the least total power; ties go to more speedup.",
    )
)
register(
    Objective(
        name="max_min_speedup",
        sense="max",
        admit_all=True,
        add=_add_fairness,
        value=_fair_value,
        description="Admit every job and maximise min_j S_j / (weight_j S_j^solo), S_j^solo the job's best speedup "
        f"alone on the fleet; then the most weighted speedup within {FAIRNESS_TOLERANCE:.0%} of that minimum.",
        fair=True,
    )
)
register(
    Objective(
        name="team_max_min",
        sense="max",
        admit_all=True,
        add=_add_fairness,
        value=_fair_value,
        description="Admit every job and maximise min over teams of (sum of the team's S_j / S_j^solo) / its share; "
        f"then the most weighted speedup within {FAIRNESS_TOLERANCE:.0%} of that minimum.",
        fair=True,
    )
)
