"""The placement MILP in Pyomo: one function per constraint family, `build_model` a flat list of them.

Variables: n[j,g,l] devices of group g at level l given to job j (integer), h[j,g,l] the serial host
(binary), a[j] admitted (binary), S[j] the modelled speedup (continuous, over-estimating the exact
one through tangent planes of the concave S(X, Y) = XY / (X + Y), X = s_host / (1-p), Y = R / p).
"""

from __future__ import annotations

from typing import Callable

import pyomo.environ as pyo

from optsched.amdahl import initial_tangent_points
from optsched.data import ModelData
from optsched.objectives import OBJECTIVES

ExtraFunctionality = Callable[[pyo.ConcreteModel, ModelData], None]


def add_variables(m: pyo.ConcreteModel, data: ModelData) -> None:
    """n in Z+ (devices), h in {0,1} (host), a in {0,1} (admitted), S >= 0 (speedup)."""
    m.J = pyo.RangeSet(0, len(data.jobs) - 1) if data.jobs else pyo.Set(initialize=[])
    m.O = pyo.Set(initialize=[o.key for o in data.options], dimen=3, ordered=True)
    m.H = pyo.Set(initialize=[o.key for j in m.J for o in data.host_options(j) if _needs_host(data, j)], dimen=3)
    caps = {o.key: min(data.groups[o.group].count, data.max_devices(o.job)) for o in data.options}
    m.n = pyo.Var(m.O, domain=pyo.NonNegativeIntegers, bounds=lambda m, j, g, l: (0, caps[j, g, l]))
    m.h = pyo.Var(m.H, domain=pyo.Binary)
    m.a = pyo.Var(m.J, domain=pyo.Binary)
    m.S = pyo.Var(m.J, domain=pyo.NonNegativeReals, bounds=lambda m, j: (0, data.best_speedup(j)))
    speed = {o.key: o.speed for o in data.options}
    m.R = pyo.Expression(m.J, rule=lambda m, j: sum(speed[o.key] * m.n[o.key] for o in data.options_of_job[j]))
    m.s_host = pyo.Expression(
        m.J, rule=lambda m, j: sum(speed[k] * m.h[k] for k in (o.key for o in data.options_of_job[j]) if k in m.H)
    )


def _needs_host(data: ModelData, j: int) -> bool:
    """Only 0 < p < 1 needs the host choice: p = 1 gives S = R, and p = 0 uses the fastest device anyway."""
    return data.jobs[j].parallel_fraction < 1.0


def add_device_capacity(m: pyo.ConcreteModel, data: ModelData) -> None:
    """sum_{j,l} n[j,g,l] <= count_g  (devices)."""
    groups = [g for g, opts in enumerate(data.options_of_group) if opts]
    if not groups:
        return
    m.device_capacity = pyo.Constraint(
        groups,
        rule=lambda m, g: sum(m.n[o.key] for o in data.options_of_group[g]) <= data.groups[g].count,
    )


def add_admission(m: pyo.ConcreteModel, data: ModelData) -> None:
    """min_j a_j <= sum_{g,l} n[j,g,l] <= max_j a_j  (devices); a_j = 1 for hard jobs (all jobs under min_power)."""
    admit_all = OBJECTIVES[data.workload.objective].admit_all
    for j, job in enumerate(data.jobs):
        if job.is_hard or admit_all:
            m.a[j].fix(1)
    if not data.jobs:
        return

    def devices(m, j):
        return sum(m.n[o.key] for o in data.options_of_job[j])

    m.admission_min = pyo.Constraint(m.J, rule=lambda m, j: devices(m, j) >= data.jobs[j].min_devices * m.a[j])
    m.admission_max = pyo.Constraint(m.J, rule=lambda m, j: devices(m, j) <= data.max_devices(j) * m.a[j])


def add_serial_host(m: pyo.ConcreteModel, data: ModelData) -> None:
    """sum_{g,l} h[j,g,l] = a_j and h[j,g,l] <= n[j,g,l]: one allocated device carries the serial part."""
    jobs = [j for j in m.J if _needs_host(data, j)]
    if not jobs:
        return
    hosts = {j: [k for k in (o.key for o in data.options_of_job[j]) if k in m.H] for j in jobs}
    m.host_choice = pyo.Constraint(jobs, rule=lambda m, j: sum(m.h[k] for k in hosts[j]) == m.a[j])
    m.host_allocated = pyo.Constraint(m.H, rule=lambda m, j, g, l: m.h[j, g, l] <= m.n[j, g, l])


def add_speedup_cuts(m: pyo.ConcreteModel, data: ModelData) -> None:
    """S_j <= (1-t)^2 s_host/(1-p) + t^2 R/p for t in T_j (speed units); S_j <= R (p=1), S_j <= s_host or fastest n (p=0)."""
    m.cuts = pyo.ConstraintList()
    for j, job in enumerate(data.jobs):
        for t in tangent_points(data, j):
            add_tangent_cut(m, data, j, t)


def tangent_points(data: ModelData, j: int) -> list[float]:
    """t = 0 and t = 1 (S <= X, S <= Y) plus a geometric grid of R / s_host ratios the job can reach."""
    p = data.jobs[j].parallel_fraction
    if p in (0.0, 1.0):
        return [0.0]
    speeds = [o.speed for o in data.options_of_job[j]]
    if not speeds:
        return []
    max_ratio = max(1.0, data.max_devices(j) * max(speeds) / min(speeds))
    return [0.0, 1.0, *initial_tangent_points(p, max_ratio)]


def add_tangent_cut(m: pyo.ConcreteModel, data: ModelData, j: int, t: float) -> None:
    """S_j <= (1-t)^2 X_j + t^2 Y_j, the tangent plane of S = XY/(X+Y) at X/(X+Y) = t (exact there, above elsewhere)."""
    p = data.jobs[j].parallel_fraction
    if p == 1.0:
        m.cuts.add(m.S[j] <= m.R[j])
    elif p == 0.0:
        m.cuts.add(m.S[j] <= m.s_host[j])
    else:
        m.cuts.add(m.S[j] <= (1 - t) ** 2 / (1 - p) * m.s_host[j] + t**2 / p * m.R[j])


def add_deadlines(m: pyo.ConcreteModel, data: ModelData) -> None:
    """R_j >= sum_{g,l} p / (D_j/W_j - (1-p)/s_gl) h[j,g,l]  (speed units): runtime W/S <= D for the chosen host."""
    rows = []
    for j, job in enumerate(data.jobs):
        if job.deadline_hours is None:
            continue
        if job.parallel_fraction == 1.0:
            rows.append((j, None))
        elif job.parallel_fraction > 0.0:
            rows.append((j, [(k, data.deadline_coefficient(o)) for o in data.host_options(j) for k in [o.key]]))
        # p = 0: the host set (m.H) holds only devices fast enough alone, and sum h = a forces one of them.
    if not rows:
        return
    coefficients = dict(rows)

    def rule(m, j):
        terms = coefficients[j]
        if terms is None:
            job = data.jobs[j]
            return m.R[j] >= job.work_hours / job.deadline_hours * m.a[j]
        return m.R[j] >= sum(c * m.h[k] for k, c in terms)

    m.deadline = pyo.Constraint(list(coefficients), rule=rule)


def groups_in(data: ModelData, domain: str | None) -> list[int]:
    return [g for g, group in enumerate(data.groups) if domain is None or group.domain == domain]


def power_expression(m: pyo.ConcreteModel, data: ModelData, domain: str | None = None):
    """Watts drawn: idle draw of every device plus (cap - idle) of each allocated one, optionally in one domain."""
    groups = groups_in(data, domain)
    idle = sum(data.groups[g].idle_w * data.groups[g].count for g in groups)
    return idle + sum((o.cap_w - o.idle_w) * m.n[o.key] for g in groups for o in data.options_of_group[g])


def add_power_budgets(m: pyo.ConcreteModel, data: ModelData) -> None:
    """sum_g idle_g count_g + sum (cap_gl - idle_g) n[j,g,l] <= budget  (W), globally and per named domain."""
    power = data.workload.power
    budgets = ([(None, power.budget_w)] if power.budget_w is not None else []) + sorted(power.domains.items())
    if not budgets:
        return
    # A scope with no placeable device draws a constant; precheck already compared it with its budget.
    budgets = [(d, b) for d, b in budgets if any(data.options_of_group[g] for g in groups_in(data, d))]
    if not budgets:
        return
    names = ["*" if d is None else d for d, _ in budgets]
    limits = dict(zip(names, (b for _, b in budgets)))
    m.power_budget = pyo.Constraint(
        names, rule=lambda m, d: power_expression(m, data, None if d == "*" else d) <= limits[d]
    )


def build_model(data: ModelData, extra_functionality: ExtraFunctionality | None = None) -> pyo.ConcreteModel:
    """The whole MILP for one workload; `extra_functionality(m, data)` may add constraints before the objective."""
    m = pyo.ConcreteModel(name=data.workload.name)
    add_variables(m, data)
    add_device_capacity(m, data)
    add_admission(m, data)
    add_serial_host(m, data)
    add_speedup_cuts(m, data)
    add_deadlines(m, data)
    add_power_budgets(m, data)
    if extra_functionality is not None:
        extra_functionality(m, data)
    OBJECTIVES[data.workload.objective].add(m, data)
    return m
