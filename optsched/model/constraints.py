"""The placement MILP: one function per constraint family, `build_model` a flat list of them.

Variables: n[j,g,l] devices of group g at level l given to job j (integer), h[j,g,l] the serial host
(binary), a[j] admitted (binary), R[j] aggregate and s_host[j] host speed (continuous, defined by one
row each), S[j] the modelled speedup, which over-estimates the exact one through tangent planes of the
concave S(X, Y) = XY / (X + Y) with X = s_host / (1 - p) and Y = R / p.

The families are written once against `Builder` (optsched.backends): the Pyomo backend turns them into
Pyomo components, the HiGHS backend into one sparse matrix; both solve the same formulation.
"""

from __future__ import annotations

import math
from typing import Callable

from optsched.model.amdahl import initial_tangent_points
from optsched.model.builder import ModelBuilder as Builder, Term
from optsched.schema.names import Family
from optsched.model.expressions import budgets, groups_in, power_terms  # noqa: F401 - re-exported for the families' users
from optsched.model.data import ModelData
from optsched.model.objectives import OBJECTIVES, ExtraObjective

INF = math.inf
ExtraFunctionality = Callable[[Builder, ModelData], None]


def add_variables(b: Builder, data: ModelData) -> None:
    """n in Z+ (devices), h in {0,1} (host), a in {0,1} (admitted), S, R, s_host >= 0 (speed units)."""
    options = data.options
    b.add_variables("n", [o.key for o in options], [0.0] * len(options),
                    [float(min(data.groups[o.group].count, data.max_devices(o.job))) for o in options], integer=True)
    hosts = [o.key for j in range(len(data.jobs)) if needs_host(data, j) for o in data.host_options(j)]
    b.add_variables("h", hosts, [0.0] * len(hosts), [1.0] * len(hosts), integer=True)
    jobs = list(range(len(data.jobs)))
    # Family.must_run lives here, as the bound a[j] >= 1 of each must-run job (a row would only be presolved away).
    must = [1.0 if j in data.must_run else 0.0 for j in jobs]
    b.add_variables("a", jobs, must, [1.0] * len(jobs), integer=True)
    b.add_variables("S", jobs, [0.0] * len(jobs), [data.best_speedup(j) for j in jobs], integer=False)
    b.add_variables("R", jobs, [0.0] * len(jobs), [INF] * len(jobs), integer=False)
    b.add_variables("s_host", jobs, [0.0] * len(jobs), [INF] * len(jobs), integer=False)


def needs_host(data: ModelData, j: int) -> bool:
    """Only p < 1 needs the host choice: with p = 1, S = R whatever the host."""
    return data.jobs[j].parallel_fraction < 1.0


def add_speed_definitions(b: Builder, data: ModelData) -> None:
    """R_j = sum_{g,l} s_jgl n[j,g,l] and s_host_j = sum_{g,l} s_jgl h[j,g,l]  (reference-device speed units)."""
    b.add_rows(Family.aggregate_speed, (
        (j, [("R", j, 1.0)] + [("n", o.key, -o.speed) for o in data.options_of_job[j]], 0.0, 0.0)
        for j in range(len(data.jobs))
    ))
    b.add_rows(Family.host_speed, (
        (j, [("s_host", j, 1.0)] + [("h", o.key, -o.speed) for o in data.host_options(j)], 0.0, 0.0)
        for j in range(len(data.jobs)) if needs_host(data, j)
    ))


def add_device_capacity(b: Builder, data: ModelData) -> None:
    """sum_{j,l} n[j,g,l] <= count_g  (devices)."""
    b.add_rows(Family.device_capacity, (
        (g, [("n", o.key, 1.0) for o in opts], -INF, float(data.groups[g].count))
        for g, opts in enumerate(data.options_of_group) if opts
    ))


def add_admission(b: Builder, data: ModelData) -> None:
    """min_j a_j <= sum_{g,l} n[j,g,l] <= max_j a_j  (devices)."""
    def rows(bound: str):
        for j, job in enumerate(data.jobs):
            devices = [("n", o.key, 1.0) for o in data.options_of_job[j]]
            if bound == "min":
                yield j, devices + [("a", j, -float(job.min_devices))], 0.0, INF
            else:
                yield j, devices + [("a", j, -float(data.max_devices(j)))], -INF, 0.0

    b.add_rows(Family.admission_min, rows("min"))
    b.add_rows(Family.admission_max, rows("max"))


def add_serial_host(b: Builder, data: ModelData) -> None:
    """sum_{g,l} h[j,g,l] = a_j and h[j,g,l] <= n[j,g,l]: one allocated device carries the serial part."""
    jobs = [j for j in range(len(data.jobs)) if needs_host(data, j)]
    b.add_rows(Family.host_choice, (
        (j, [("h", o.key, 1.0) for o in data.host_options(j)] + [("a", j, -1.0)], 0.0, 0.0) for j in jobs
    ))
    b.add_rows(Family.host_allocated, (
        (o.key, [("h", o.key, 1.0), ("n", o.key, -1.0)], -INF, 0.0) for j in jobs for o in data.host_options(j)
    ))


def add_speedup_cuts(b: Builder, data: ModelData) -> None:
    """S_j <= (1-t)^2 s_host/(1-p) + t^2 R/p for t in T_j (speed units); S_j <= R for p = 1, S_j <= s_host for p = 0."""
    # One add_rows call for every initial cut: a call per row costs more than the rows themselves on large models.
    b.add_rows(Family.speedup_cut, [
        row for j in range(len(data.jobs)) for t in tangent_points(data, j) if (row := _new_tangent_cut(b, data, j, t))
    ])


def tangent_points(data: ModelData, j: int) -> list[float]:
    """t = 0 and t = 1 (S <= X, S <= Y) plus a geometric grid of the R / s_host ratios the job can reach."""
    p = data.jobs[j].parallel_fraction
    if p in (0.0, 1.0):
        return [0.0]
    speeds = [o.speed for o in data.options_of_job[j]]
    if not speeds:
        return []
    max_ratio = max(1.0, data.max_devices(j) * max(speeds) / min(speeds))
    return [0.0, 1.0, *initial_tangent_points(p, max_ratio)]


def add_tangent_cut(b: Builder, data: ModelData, j: int, t: float) -> bool:
    """S_j <= (1-t)^2 X_j + t^2 Y_j, the tangent plane of S = XY/(X+Y) where X/(X+Y) = t (exact there, above elsewhere).
    Returns False when the job already has this cut."""
    row = _new_tangent_cut(b, data, j, t)
    if row is None:
        return False
    b.add_rows(Family.speedup_cut, [row])
    return True


def _new_tangent_cut(b: Builder, data: ModelData, j: int, t: float):
    """The row of the cut at t, recorded in b.cut_keys; None when the job already has it."""
    key = (j, round(t, 9))
    if key in b.cut_keys:
        return None
    b.cut_keys.add(key)
    p = data.jobs[j].parallel_fraction
    if p == 1.0:
        terms: list[Term] = [("S", j, 1.0), ("R", j, -1.0)]
    elif p == 0.0:
        terms = [("S", j, 1.0), ("s_host", j, -1.0)]
    else:
        terms = [("S", j, 1.0), ("s_host", j, -((1 - t) ** 2) / (1 - p)), ("R", j, -(t**2) / p)]
    return key, terms, -INF, 0.0


def add_deadlines(b: Builder, data: ModelData) -> None:
    """R_j >= sum_{g,l} p / (D_j/W_j - (1-p)/s_gl) h[j,g,l]  (speed units): runtime W/S <= D for the chosen host."""
    def rows():
        for j, job in enumerate(data.jobs):
            if job.deadline_hours is None or job.parallel_fraction == 0.0:
                # p = 0: the host set holds only devices fast enough alone, and sum h = a forces one of them.
                continue
            if job.parallel_fraction == 1.0:
                yield j, [("R", j, 1.0), ("a", j, -job.work_hours / job.deadline_hours)], 0.0, INF
            else:
                need = [("h", o.key, -data.deadline_coefficient(o)) for o in data.host_options(j)]
                yield j, [("R", j, 1.0)] + need, 0.0, INF

    b.add_rows(Family.deadline, rows())


def add_power_budgets(b: Builder, data: ModelData) -> None:
    """sum_g idle_g count_g + sum (cap_gl - idle_g) n[j,g,l] <= budget  (W), for the fleet and each named domain."""
    def rows():
        for domain, limit in budgets(data):
            idle, terms = power_terms(data, domain)
            # A scope with no placeable device draws a constant; precheck already compared it with its budget.
            if terms:
                yield ("*" if domain is None else domain), terms, -INF, limit - idle

    b.add_rows(Family.power_budget, rows())


def populate_model(
    b: Builder,
    data: ModelData,
    *,
    extra_functionality: ExtraFunctionality | None = None,
    with_budgets: bool = True,
    extra_objective: ExtraObjective | None = None,
) -> None:
    """Every family of the MILP, in order; `extra_functionality(b, data)` may add rows before the objective is set,
    `extra_objective` variables, rows and terms added to the objective."""
    add_variables(b, data)
    add_speed_definitions(b, data)
    add_device_capacity(b, data)
    add_admission(b, data)
    add_serial_host(b, data)
    add_speedup_cuts(b, data)
    add_deadlines(b, data)
    if with_budgets:
        add_power_budgets(b, data)
    if extra_functionality is not None:
        extra_functionality(b, data)
    extra = extra_objective.add(b, data) if extra_objective is not None else []
    b.tie_break_weight = OBJECTIVES[data.workload.objective].add(b, data, extra)
