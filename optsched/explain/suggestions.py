"""What it would take: the fewest and smallest changes that make an infeasible workload feasible.

An elastic version of the same MILP: every power budget gets a slack in watts, every hard deadline an
indicator that lifts it, every hard job's admission may be given up; each used slack is penalised and the
penalties are minimised lexicographically: (1) the number of changes, (2) the budget raises relative to
each budget, (3) the lifted deadlines' runtimes (the fastest placement, so the smallest extension).
"""

from __future__ import annotations

import math
import time
from typing import Any

from optsched.model.builder import ModelBuilder, Row, Term
from optsched.model.data import ModelData
from optsched.model.expressions import budgets, power_terms
from optsched.schema.plan import Suggestion
from optsched.schema.workload import Priority, Workload
from optsched.solve.backends import Builder, build_model
from optsched.solve.extract import exact_speedups
from optsched.solve.highs import Outcome, SolveRequest

INF = math.inf
Objective = tuple[list[Term], float]  # (terms, constant) of one lexicographic stage, minimised


def suggest_changes(workload: Workload, *, time_limit_s: float = 20.0) -> list[Suggestion]:
    """The smallest set of changes after which the workload has a feasible plan ([] if it already has one)."""
    data = ModelData(workload)
    items = [s for j in list(data.must_run) for s in _unplaceable(data, j)]
    if items:
        # Changes to the jobs themselves come first; the budgets and deadlines are then sized for the result.
        data = ModelData(apply_suggestions(workload, items))
    must = list(data.must_run)
    blocked = {j for j in must if not data.options_of_job[j]}
    relaxed = _relaxed(data.workload, must)
    b = build_model(ModelData(relaxed), extra_functionality=lambda b, d: _add_elastic_rows(b, data, must, blocked))
    deadline = time.monotonic() + time_limit_s
    changes = _changes_terms(b, data, must, blocked)
    result = _minimise(b, changes, deadline)
    if result is None:
        return items
    _cap(b, changes, result.incumbent)
    size = _relative_size(data, must, blocked)
    result = _minimise(b, size, deadline) or result
    _cap(b, size, result.incumbent)
    fastest: list[Term] = [
        ("S", j, -1.0 / max(data.best_speedup(j), 1e-9)) for j in must if _has_deadline(data, j, blocked)
    ]
    result = _minimise(b, (fastest, 0.0), deadline) or result
    return items + _read_suggestions(b, data, must, blocked, result)


def apply_suggestions(workload: Workload, suggestions: list[Suggestion]) -> Workload:
    """The workload with every suggestion applied (for testing them, or for a program that accepts them)."""
    doc = workload.model_dump(mode="json")
    removed = []
    for s in suggestions:
        if s.kind == "remove_job":
            removed.append(int(s.target.removeprefix("jobs[").removesuffix("]")))
        else:
            _set_path(doc, s.target, s.needed)
    for index in sorted(removed, reverse=True):
        del doc["jobs"][index]
    return Workload.load(doc)




def _has_deadline(data: ModelData, j: int, blocked: set[int]) -> bool:
    return data.jobs[j].deadline_hours is not None and j not in blocked


def _deadline(data: ModelData, j: int) -> float:
    """D of job j, one of the jobs _has_deadline keeps."""
    deadline = data.jobs[j].deadline_hours
    if deadline is None:
        raise ValueError(f"job {data.jobs[j].id!r} has no deadline")
    return deadline


def _relaxed(workload: Workload, must: list[int]) -> Workload:
    """The workload with the hard rules lifted (deadlines of must-run jobs, budgets, forced admission): the
    elastic rows put them back with slacks."""
    jobs = list(workload.jobs)
    for j in must:
        jobs[j] = jobs[j].model_copy(update={"deadline_hours": None, "priority": Priority.normal})
    return workload.model_copy(
        update={"jobs": tuple(jobs), "power": workload.power.model_copy(update={"budget_w": None, "domains": {}}),
                "objective": "weighted_speedup"}
    )


def _budget_names(data: ModelData) -> list[tuple[str, float]]:
    return [("*" if d is None else d, limit) for d, limit in budgets(data)]


def _add_elastic_rows(b: ModelBuilder, data: ModelData, must: list[int], blocked: set[int]) -> None:
    add_elastic_power_budgets(b, data)
    add_elastic_deadlines(b, data, [j for j in must if _has_deadline(data, j, blocked)])
    add_deadline_shortfall(b, data, [j for j in must if _has_deadline(data, j, blocked)])


def add_elastic_power_budgets(b: ModelBuilder, data: ModelData) -> None:
    """idle + sum (cap - idle) n - sigma_b <= budget_b,  0 <= sigma_b <= (peak_b - budget_b) y_b  (W)."""
    names = _budget_names(data)
    peaks = {
        name: max(0.0, _scope_peak(data, domain) - limit)
        for (name, limit), (domain, _) in zip(names, budgets(data), strict=True)
    }
    b.add_variables("sigma", [n for n, _ in names], [0.0] * len(names), [peaks[n] for n, _ in names], integer=False)
    b.add_variables("y", [n for n, _ in names], [0.0] * len(names), [1.0] * len(names), integer=True)
    rows: list[Row] = []
    for (name, limit), (domain, _) in zip(names, budgets(data), strict=True):
        idle, terms = power_terms(data, domain)
        rows.append((name, terms + [("sigma", name, -1.0)], -INF, limit - idle))
    b.add_rows("elastic_power_budget", rows)
    b.add_rows(
        "budget_raise_used", [(n, [("sigma", n, 1.0), ("y", n, -max(peaks[n], 1.0))], -INF, 0.0) for n, _ in names]
    )


def _scope_peak(data: ModelData, domain: str | None) -> float:
    return sum(
        g.count * max(lv.cap_w for lv in g.power_levels) for g in data.groups if domain is None or g.domain == domain
    )


def add_elastic_deadlines(b: ModelBuilder, data: ModelData, jobs: list[int]) -> None:
    """R_j >= sum_o min(c_o, M_j) h_o - M_j z_j (0<p<1); R_j >= W/D (a_j - z_j) (p=1); s_host >= W/D (a_j - z_j)
    (p=0)."""
    b.add_variables("z", jobs, [0.0] * len(jobs), [1.0] * len(jobs), integer=True)
    rows: list[Row] = []
    for j in jobs:
        p, rate = data.jobs[j].parallel_fraction, data.jobs[j].work_hours / _deadline(data, j)
        if p == 1.0:
            rows.append((j, [("R", j, 1.0), ("a", j, -rate), ("z", j, rate)], 0.0, INF))
        elif p == 0.0:
            rows.append((j, [("s_host", j, 1.0), ("a", j, -rate), ("z", j, rate)], 0.0, INF))
        else:
            big = sum(o.speed * data.groups[o.group].count for o in data.options_of_job[j]) + 1.0
            need: list[Term] = []
            for o in data.options_of_job[j]:
                c = data.deadline_coefficient(o)
                need.append(("h", o.key, -min(c if c is not None else big, big)))
            rows.append((j, [("R", j, 1.0), *need, ("z", j, big)], 0.0, INF))
    b.add_rows("elastic_deadline", rows)


def _changes_terms(b: Builder, data: ModelData, must: list[int], blocked: set[int]) -> Objective:
    """Number of changes: budgets raised + deadlines lifted + must-run jobs given up (1 - a_j)."""
    terms: list[Term] = [("y", n, 1.0) for n, _ in _budget_names(data)]
    terms += [("z", j, 1.0) for j in must if _has_deadline(data, j, blocked)]
    admissible = [j for j in must if j not in blocked]
    terms += [("a", j, -1.0) for j in admissible]
    return terms, float(len(admissible))


def add_deadline_shortfall(b: ModelBuilder, data: ModelData, jobs: list[int]) -> None:
    """delta_j >= (W/D) z_j - S_j, delta_j >= 0: how far short of the speedup its deadline needs a lifted job falls."""
    b.add_variables("delta", jobs, [0.0] * len(jobs), [INF] * len(jobs), integer=False)
    b.add_rows(
        "deadline_shortfall",
        [
            (
                j,
                [("delta", j, 1.0), ("z", j, -data.jobs[j].work_hours / _deadline(data, j)), ("S", j, 1.0)],
                0.0,
                INF,
            )
            for j in jobs
        ],
    )


def _relative_size(data: ModelData, must: list[int], blocked: set[int]) -> Objective:
    """Size of the changes, each relative to what it changes: sigma_b / budget_b, delta_j / (W/D) for a lifted
    deadline (a linear stand-in for the extension W/S - D), and 1 for a must-run job given up."""
    terms: list[Term] = [("sigma", name, 1.0 / max(limit, 1.0)) for name, limit in _budget_names(data)]
    for j in must:
        if _has_deadline(data, j, blocked):
            terms.append(("delta", j, _deadline(data, j) / data.jobs[j].work_hours))
    admissible = [j for j in must if j not in blocked]
    terms += [("a", j, -1.0) for j in admissible]
    return terms, float(len(admissible))


def _minimise(b: Builder, objective: Objective, deadline: float):
    terms, constant = objective
    b.set_objective(terms, constant, maximise=False)
    result = b.solve(SolveRequest(deadline, 1e-9))
    if result.outcome not in (Outcome.optimal, Outcome.limit_with_solution):
        return None
    return result


def _cap(b: Builder, objective: Objective, value: float) -> None:
    """Keep what an earlier stage achieved while a later stage optimises the next criterion."""
    terms, constant = objective
    b.add_rows("lexicographic", [(len(terms), terms, -INF, value - constant + 1e-7 * max(1.0, abs(value)))])


def _read_suggestions(b: Builder, data: ModelData, must, blocked, result) -> list[Suggestion]:
    counts = {k: int(round(v)) for k, v in b.values(result, "n", (o.key for o in data.options)).items()}
    out: list[Suggestion] = []
    for (name, limit), (domain, _) in zip(_budget_names(data), budgets(data), strict=True):
        raise_w = b.values(result, "sigma", [name])[name]
        if raise_w > 1e-6:
            needed = math.ceil(limit + raise_w - 1e-6)
            what = "the fleet budget" if domain is None else f"the {domain} budget"
            target = "power.budget_w" if domain is None else f"power.domains.{domain}"
            out.append(Suggestion(kind="raise_budget", target=target, current=limit, needed=float(needed),
                                  message=f"raise {what} by {needed - limit:,.0f} W (to {needed:,.0f} W)"))
    speeds = exact_speedups(data, counts)
    for j in must:
        if j in blocked:
            continue
        job = data.jobs[j]
        admitted = any(counts.get(o.key, 0) for o in data.options_of_job[j])
        if not admitted and data.admit_all:
            out.append(Suggestion(kind="remove_job", target=f"jobs[{j}]", current=job.id, needed=None,
                                  message=f"job {job.id!r} cannot be placed with the others: remove it from this "
                                  f"workload ({data.workload.objective} admits every job)"))
            continue
        if not admitted:
            out.append(
                Suggestion(
                    kind="lower_priority",
                    target=f"jobs[{j}].priority",
                    current=job.priority.value,
                    needed="normal",
                    message=f"job {job.id!r} cannot be placed with the others: lower its "
                    f"priority from {job.priority.value} to normal (it is then placed only where it fits)",
                )
            )
            continue
        if job.deadline_hours is not None:
            runtime = job.work_hours / speeds[j]
            if runtime > job.deadline_hours * (1 + 1e-6):
                # Rounded up to 0.01 h; within the deadline tolerance (1e-6 relative) an exact fit stays exact.
                needed = math.ceil(runtime * 100 * (1 - 1e-7)) / 100
                out.append(
                    Suggestion(
                        kind="extend_deadline",
                        target=f"jobs[{j}].deadline_hours",
                        current=job.deadline_hours,
                        needed=needed,
                        message=f"extend job {job.id!r}'s deadline by {needed - job.deadline_hours:.2f} h "
                        f"(to {needed:.2f} h)",
                    )
                )
    return out


def _unplaceable(data: ModelData, j: int) -> list[Suggestion]:
    """Must-run jobs that no budget or deadline change can place: what of the job itself would have to change."""
    job = data.jobs[j]
    if data.options_of_job[j]:
        if data.eligible_devices(j) < job.min_devices:
            n = data.eligible_devices(j)
            return [Suggestion(kind="lower_min_devices", target=f"jobs[{j}].min_devices", current=job.min_devices,
                               needed=n, message=f"job {job.id!r} needs {job.min_devices} devices but only {n} are "
                               f"eligible: lower min_devices to {n}")]
        return []
    out: list[Suggestion] = []
    allowed = [g for g in data.groups if job.allowed_models is None or g.model in job.allowed_models]
    if not allowed:
        # Allow the model whose devices would also hold the job's memory, if any does.
        fits = [g for g in data.groups if job.memory_gb is None or (g.memory_gb or 0.0) >= job.memory_gb]
        model = sorted(fits or data.groups, key=lambda g: (-(g.memory_gb or 0.0), g.model))[0].model
        out.append(Suggestion(kind="add_allowed_model", target=f"jobs[{j}].allowed_models",
                              current=list(job.allowed_models or ()), needed=[*(job.allowed_models or ()), model],
                              message=f"job {job.id!r} cannot run at all: no device is of an allowed model "
                              f"{list(job.allowed_models or ())}; allow {model}"))
        allowed = [g for g in data.groups if g.model == model]
    if job.memory_gb is not None and not any((g.memory_gb or 0.0) >= job.memory_gb for g in allowed if g.memory_gb):
        known = [g.memory_gb for g in allowed if g.memory_gb is not None]
        if known:
            message = (
                f"job {job.id!r} cannot run at all: no device has {job.memory_gb:g} GB of memory (largest: "
                f"{max(known):g} GB)"
            )
        else:
            message = (f"job {job.id!r} cannot run at all: it needs {job.memory_gb:g} GB per device and no allowed "
                       "device states its memory; drop the requirement or give the devices memory_gb")
        out.append(Suggestion(kind="lower_memory", target=f"jobs[{j}].memory_gb", current=job.memory_gb,
                              needed=max(known) if known else None, message=message))
    return out


def _set_path(doc: dict, path: str, value: Any) -> None:
    parts: list[Any] = []
    for piece in path.split("."):
        while "[" in piece:
            name, rest = piece.split("[", 1)
            if name:
                parts.append(name)
            index, piece = rest.split("]", 1)
            parts.append(int(index))
        if piece:
            parts.append(piece)
    node = doc
    for part in parts[:-1]:
        node = node[part]
    node[parts[-1]] = value


