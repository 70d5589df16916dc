"""The placement MILP: one function per constraint family, `build_model` a flat list of them.

Variables: n[j,g,l] devices of group g at level l given to job j (integer), h[j,g,l] the serial host
(binary), a[j] admitted (binary), R[j] aggregate and s_host[j] host speed (continuous, defined by one
row each), S[j] the modelled speedup, which over-estimates the exact one through tangent planes of the
concave S(X, Y) = XY / (X + Y) with X = s_host / (1 - p) and Y = R / p.

The families are written once against `Builder` (optsched.solve.backends): the Pyomo backend turns them into
Pyomo components, the HiGHS backend into one sparse matrix; both solve the same formulation.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from optsched.model.amdahl import initial_tangent_points
from optsched.model.builder import Entries, Row, Term
from optsched.model.builder import ModelBuilder as Builder
from optsched.model.data import ModelData
from optsched.model.expressions import budgets, groups_in, idle_draw, power_terms  # noqa: F401 - re-exported for the families' users
from optsched.model.objectives import OBJECTIVES, ExtraObjective, fairness_terms, fairness_upper_bound
from optsched.schema.names import Family

INF = math.inf
ExtraFunctionality = Callable[[Builder, ModelData], None]


def add_variables(b: Builder, data: ModelData) -> None:
    """n in Z+ (devices), h in {0,1} (host), a in {0,1} (admitted), S, R, s_host >= 0 (speed units)."""
    options, o, a = data.options, data.option_arrays, data.arrays
    most = np.minimum(a.count[o.group], a.max_devices[o.job]).astype(np.float64)
    b.add_variables("n", [x.key for x in options], [0.0] * len(options), most.tolist(), integer=True)
    # The host options of the jobs with p < 1, job by job: the order of data.host_options.
    hosts = [options[i].key for i in o.hosts.tolist()]
    b.add_variables("h", hosts, [0.0] * len(hosts), [1.0] * len(hosts), integer=True)
    jobs = list(range(len(data.jobs)))
    # Family.must_run lives here, as the bound a[j] >= 1 of each must-run job (a row would only be presolved away).
    must = a.must.astype(np.float64).tolist()
    b.add_variables("a", jobs, must, [1.0] * len(jobs), integer=True)
    b.add_variables("S", jobs, [0.0] * len(jobs), [data.best_speedup(j) for j in jobs], integer=False)
    b.add_variables("R", jobs, [0.0] * len(jobs), [INF] * len(jobs), integer=False)
    b.add_variables("s_host", jobs, [0.0] * len(jobs), [INF] * len(jobs), integer=False)


def needs_host(data: ModelData, j: int) -> bool:
    """Only p < 1 needs the host choice: with p = 1, S = R whatever the host."""
    return data.jobs[j].parallel_fraction < 1.0


def add_speed_definitions(b: Builder, data: ModelData) -> None:
    """R_j = sum_{g,l} s_jgl n[j,g,l] and s_host_j = sum_{g,l} s_jgl h[j,g,l]  (reference-device speed units)."""
    o = data.option_arrays
    jobs = np.arange(len(data.jobs))
    b.add_matrix_rows(Family.aggregate_speed, range(len(jobs)), np.zeros(len(jobs)), np.zeros(len(jobs)), [
        ("R", jobs, jobs, np.ones(len(jobs))),
        ("n", o.job, np.arange(len(o.job)), -o.speed),
    ])
    hosted = _hosted_jobs(data)
    row_of = _row_of(hosted, len(jobs))
    b.add_matrix_rows(Family.host_speed, hosted.tolist(), np.zeros(len(hosted)), np.zeros(len(hosted)), [
        ("s_host", np.arange(len(hosted)), hosted, np.ones(len(hosted))),
        ("h", row_of[o.job[o.hosts]], np.arange(len(o.hosts)), -o.speed[o.hosts]),
    ])


def add_device_capacity(b: Builder, data: ModelData) -> None:
    """sum_{j,l} n[j,g,l] <= count_g  (devices)."""
    o = data.option_arrays
    used = np.flatnonzero(np.bincount(o.group, minlength=len(data.groups)))
    count = np.array([float(data.groups[g].count) for g in used.tolist()])
    b.add_matrix_rows(Family.device_capacity, used.tolist(), np.full(len(used), -INF), count, [
        ("n", _row_of(used, len(data.groups))[o.group], np.arange(len(o.group)), np.ones(len(o.group))),
    ])


def add_admission(b: Builder, data: ModelData) -> None:
    """min_j a_j <= sum_{g,l} n[j,g,l] <= max_j a_j  (devices)."""
    o = data.option_arrays
    jobs = np.arange(len(data.jobs))
    devices = ("n", o.job, np.arange(len(o.job)), np.ones(len(o.job)))
    least = np.array([float(job.min_devices) for job in data.jobs])
    most = np.array([float(data.max_devices(j)) for j in jobs.tolist()])
    zeros = np.zeros(len(jobs))
    b.add_matrix_rows(
        Family.admission_min, jobs.tolist(), zeros, np.full(len(jobs), INF), [devices, ("a", jobs, jobs, -least)]
    )
    b.add_matrix_rows(
        Family.admission_max, jobs.tolist(), np.full(len(jobs), -INF), zeros, [devices, ("a", jobs, jobs, -most)]
    )


def add_serial_host(b: Builder, data: ModelData) -> None:
    """sum_{g,l} h[j,g,l] = a_j and h[j,g,l] <= n[j,g,l]: one allocated device carries the serial part."""
    o = data.option_arrays
    hosted, hosts = _hosted_jobs(data), o.hosts
    ones, rows = np.ones(len(hosts)), np.arange(len(hosts))
    b.add_matrix_rows(Family.host_choice, hosted.tolist(), np.zeros(len(hosted)), np.zeros(len(hosted)), [
        ("h", _row_of(hosted, len(data.jobs))[o.job[hosts]], rows, ones),
        ("a", np.arange(len(hosted)), hosted, -np.ones(len(hosted))),
    ])
    b.add_matrix_rows(Family.host_allocated, b.block_keys("h"), np.full(len(hosts), -INF), np.zeros(len(hosts)), [
        ("h", rows, rows, ones),
        ("n", rows, hosts, -ones),
    ])


def _hosted_jobs(data: ModelData) -> np.ndarray:
    """Jobs with a host choice (p < 1), in order."""
    return np.flatnonzero(data.arrays.p < 1.0)


def _row_of(items: np.ndarray, size: int) -> np.ndarray:
    """[size] the row of each item listed in `items` (-1 for the others)."""
    row = np.full(size, -1, dtype=np.int64)
    row[items] = np.arange(len(items))
    return row


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


def _new_tangent_cut(b: Builder, data: ModelData, j: int, t: float) -> Row | None:
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
    # p = 0 needs no row: the host set holds only devices fast enough alone, and sum h = a forces one of them.
    a = data.arrays
    jobs = np.flatnonzero(np.isfinite(a.deadline) & (a.p > 0.0))
    parallel = jobs[a.p[jobs] == 1.0]
    row_of = _row_of(jobs, len(data.jobs))
    o = data.option_arrays
    timed = row_of[o.job[o.hosts]] >= 0  # of the h variables, those of the jobs with a row here
    positions = np.flatnonzero(timed)
    hosts = o.hosts[positions]
    b.add_matrix_rows(Family.deadline, jobs.tolist(), np.zeros(len(jobs)), np.full(len(jobs), INF), [
        ("R", np.arange(len(jobs)), jobs, np.ones(len(jobs))),
        ("a", row_of[parallel], parallel, -a.work[parallel] / a.deadline[parallel]),
        ("h", row_of[o.job[hosts]], positions, -o.deadline_coefficient[hosts]),
    ])


def add_power_budgets(b: Builder, data: ModelData) -> None:
    """sum_g idle_g count_g + sum (cap_gl - idle_g) n[j,g,l] <= budget  (W), for the fleet and each named domain."""
    o = data.option_arrays
    by_group = np.lexsort((np.arange(len(o.group)), o.group))  # the order of power_terms: group by group
    keys: list[str] = []
    limits: list[float] = []
    entries: list[Entries] = []
    for domain, limit in budgets(data):
        groups = groups_in(data, domain)
        # A scope with no placeable device draws a constant; precheck already compared it with its budget.
        chosen = by_group[np.isin(o.group[by_group], groups)]
        if not len(chosen):
            continue
        idle = idle_draw(data, domain)
        entries.append(("n", np.full(len(chosen), len(keys)), chosen, o.draw[chosen]))
        keys.append("*" if domain is None else domain)
        limits.append(limit - idle)
    if keys:
        b.add_matrix_rows(Family.power_budget, keys, np.full(len(keys), -INF), np.array(limits), entries)


def add_fairness(b: Builder, data: ModelData) -> None:
    """First solve: z * target_m - sum_{j in m} S_j / S_j^solo <= 0 for each member m (job or team; z
    dimensionless). Second solve: sum_{j in m} S_j / S_j^solo >= floor * target_m instead."""
    if not OBJECTIVES[data.workload.objective].fair:
        return
    members = fairness_terms(data)
    floor = data.fairness_floor
    if floor is None:
        b.add_variables("z", [0], [0.0], [fairness_upper_bound(data)], integer=False)
        b.add_rows(Family.fairness, [
            (key, [("z", 0, target), *[("S", j, -c) for j, c in terms]], -INF, 0.0) for key, terms, target in members
        ])
        return
    # The modelled S over-estimates the exact one (tangent cuts): the objective's value rejects a plan that keeps
    # the floor only in the model, and the cut loop tightens S until the model agrees.
    b.add_rows(Family.fairness_floor, [
        (key, [("S", j, c) for j, c in terms], floor * target, INF) for key, terms, target in members
    ])


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
    add_fairness(b, data)
    if extra_functionality is not None:
        extra_functionality(b, data)
    extra = extra_objective.add(b, data) if extra_objective is not None else []
    b.extra_objective = bool(extra)
    b.tie_break_weight = OBJECTIVES[data.workload.objective].add(b, data, extra)
