"""Placement baselines: the simple rules an optimiser must beat, each returning a Plan the verifier accepts.

- `greedy`: priority, then earliest deadline; each job takes the fastest eligible devices at maximum cap until
  it meets its deadline or reaches max_devices, within capacity and budgets.
- `greedy_power`: the same, but a device that does not fit the budget at maximum cap tries the lower caps.
- `lp_round`: the LP relaxation of our model (with tightened tangent cuts), rounded down and repaired.
- `deadline_greedy`: deadline- and budget-aware: must-run jobs tightest deadline first, each at the allocation
  that meets its deadline with the least extra power, then leftover devices and watts by weighted speedup per
  watt (optsched.solve.construct, which is also the planner's first plan).

Their pieces live in optsched.solve.heuristics, which the planner also uses to warm-start the MILP.
"""

from __future__ import annotations

import time

from optsched.model.data import ModelData
from optsched.model.objectives import OBJECTIVES
from optsched.schema.plan import Plan, Status
from optsched.schema.workload import Workload, workload_warnings
from optsched.solve.backends import build_model
from optsched.solve.construct import construct
from optsched.solve.extract import Counts, empty_plan, extract, used_by_job
from optsched.solve.heuristics import FreeCapacity, greedy_counts, round_and_repair
from optsched.solve.incumbent import satisfied
from optsched.solve.strategies.direct import primary_bound, tighten_relaxation


def lp_relaxation(data: ModelData, deadline: float) -> tuple[dict[tuple[int, int, int], float] | None, float | None]:
    """(fractional n, LP bound on the objective) of the relaxation with tightened tangent cuts; (None, None) if none."""
    b = build_model(data)
    result = tighten_relaxation(b, data, deadline, threads=None)
    if result is None or result.values is None:
        return None, None
    values = b.values(result, "n", (o.key for o in data.options))
    n = {o.key: values[o.key] for o in data.options}
    return n, primary_bound(b, data, OBJECTIVES[data.workload.objective], result.bound)


def _baseline_plan(workload: Workload, name: str, make_counts) -> Plan:
    started = time.monotonic()
    data = ModelData(workload)
    objective = OBJECTIVES[workload.objective]
    counts = make_counts(data)
    must = data.must_run
    warnings = tuple(workload_warnings(workload))
    by_job = used_by_job(data, counts)
    missing = [data.jobs[j].id for j in must if not satisfied(data, j, by_job[j])]
    if missing or not FreeCapacity(data).within_budgets:
        reason = f"{name} could not place the must-run jobs {missing}" if missing else f"{name}: idle draw over budget"
        return empty_plan(data, Status.infeasible, (reason,), warnings, started, rounds=0)
    return extract(data, objective, counts, Status.heuristic, None, warnings, started, rounds=0)


def greedy(workload) -> Plan:
    """Priority then earliest deadline; fastest eligible devices at maximum cap, within capacity and budgets."""
    return _baseline_plan(Workload.load(workload), "greedy", greedy_counts)


def greedy_power(workload) -> Plan:
    """As greedy, but a device that does not fit the budget at maximum cap tries lower caps, level by level."""
    return _baseline_plan(Workload.load(workload), "greedy_power", lambda d: greedy_counts(d, lower_caps=True))


def lp_round(workload, time_limit_s: float = 30.0) -> Plan:
    """The LP relaxation rounded down and repaired (a Gavel-style fractional allocation made integral)."""
    w = Workload.load(workload)

    def counts(data: ModelData) -> Counts:
        fractional, _ = lp_relaxation(data, time.monotonic() + time_limit_s)
        return round_and_repair(data, fractional) if fractional is not None else {}

    return _baseline_plan(w, "lp_round", counts)


def deadline_greedy(workload) -> Plan:
    """Tightest deadline first at the least power that meets it, then the most weighted speedup per watt."""
    return _baseline_plan(Workload.load(workload), "deadline_greedy", construct)


BASELINES = {"greedy": greedy, "greedy_power": greedy_power, "lp_round": lp_round, "deadline_greedy": deadline_greedy}
