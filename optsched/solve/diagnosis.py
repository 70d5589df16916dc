"""Plain-language reasons why a workload has no feasible plan."""

from __future__ import annotations

import time

from optsched.model.data import ModelData, eligible
from optsched.schema.names import Family, constraint_name
from optsched.solve.highs import Outcome, SolveRequest

# Each least-power probe of an infeasible workload gets this long; a probe that times out says nothing.
PROBE_TIME_LIMIT_S = 5.0




def _who(data: ModelData, j: int) -> str:
    job = data.jobs[j]
    return f"{job.priority.value} job {job.id!r}"


def precheck(data: ModelData) -> list[str]:
    """Reasons that need no solve: a must-run job with no eligible device or no way to meet its deadline, idle over
    budget."""
    reasons = []
    for j in list(data.must_run):
        reasons.extend(_job_reasons(data, j))
    reasons.extend(_idle_reasons(data))
    return reasons


def _job_reasons(data: ModelData, j: int) -> list[str]:
    job = data.jobs[j]
    if not data.has_options(j):
        return [f"{_who(data, j)} cannot run at all: {_why_no_device(data, j)}"]
    if data.eligible_devices(j) < job.min_devices:
        return [
            f"{constraint_name(Family.admission_min, job.id)}: {_who(data, j)} needs at least {job.min_devices} "
            "devices but only "
            f"{data.eligible_devices(j)} eligible devices exist"
        ]
    if job.deadline_hours is not None:
        best = job.work_hours / data.best_speedup(j)
        if best > job.deadline_hours * (1 + 1e-6):
            return [
                f"{constraint_name(Family.deadline, job.id)}: {_who(data, j)} misses its deadline even on its "
                f"{data.max_devices(j)} fastest eligible devices "
                f"at the fastest level: best runtime {best:.3g} h > deadline {job.deadline_hours:.3g} h"
            ]
    return []


def _why_no_device(data: ModelData, j: int) -> str:
    job = data.jobs[j]
    allowed = [g for g in data.groups if job.allowed_models is None or g.model in job.allowed_models]
    if not allowed:
        return f"no device is of an allowed model {list(job.allowed_models or ())}"
    if job.memory_gb is not None and not any(eligible(job, g) for g in allowed):
        known = [g.memory_gb for g in allowed if g.memory_gb is not None]
        if not known:
            return f"it needs {job.memory_gb:g} GB per device and no allowed device states its memory"
        return f"no device has {job.memory_gb:g} GB of memory (largest allowed: {max(known):g} GB)"
    return "no eligible device"


def _idle_reasons(data: ModelData) -> list[str]:
    power = data.workload.power
    reasons = []
    if power.budget_w is not None and data.idle_power_w > power.budget_w:
        reasons.append(
            f"{constraint_name(Family.power_budget, None)}: the idle draw of all devices ({data.idle_power_w:,.0f} W) "
            "already exceeds the global budget "
            f"({power.budget_w:,.0f} W) by {data.idle_power_w - power.budget_w:,.0f} W"
        )
    for domain, budget in sorted(power.domains.items()):
        idle = data.idle_power_of_domain(domain)
        if idle > budget:
            reasons.append(
                f"{constraint_name(Family.power_budget, domain)}: the idle draw of domain {domain!r} ({idle:,.0f} W) "
                "already exceeds its budget "
                f"({budget:,.0f} W) by {idle - budget:,.0f} W"
            )
    return reasons


def diagnose_infeasible(data: ModelData) -> list[str]:
    """For each budget, the least power the must-run jobs need there (other budgets lifted); then joint conflicts."""
    from optsched.model.expressions import budgets

    must = [data.jobs[j].id for j in list(data.must_run)]
    reasons = []
    for domain, budget in budgets(data):
        least = least_power(data, domain)
        if least is not None and least > budget * (1 + 1e-9) + 1e-6:
            where = "the whole fleet" if domain is None else f"domain {domain!r}"
            reasons.append(
                f"{constraint_name(Family.power_budget, domain)}: the must-run jobs {must} need at least "
                f"{least:,.0f} W in {where}; the budget is "
                f"{budget:,.0f} W (short by {least - budget:,.0f} W)"
            )
    if reasons:
        return reasons
    if least_power(data, None) is None:
        return [
            f"the must-run jobs {must} cannot all be placed at once, even with unlimited power: "
            "together they need more eligible devices (or faster ones for their deadlines) than exist"
        ]
    return [f"each power budget can be met on its own, but not all together with the must-run jobs {must} placed"]


def least_power(data: ModelData, domain: str | None, *, keep_domain_budgets: bool = False) -> float | None:
    """min power in `domain` (None = fleet) with must-run jobs placed and the budgets lifted (all of them, or
    only the global one with `keep_domain_budgets`); None if impossible."""
    from optsched.model.expressions import power_terms
    from optsched.solve.backends import build_model

    idle, terms = power_terms(data, domain)
    if not terms:
        return idle
    b = build_model(data, with_budgets=keep_domain_budgets)
    b.set_objective(terms, idle, maximise=False)
    result = b.solve(SolveRequest(time.monotonic() + PROBE_TIME_LIMIT_S, 1e-6))
    if result.outcome == Outcome.infeasible:
        return None
    return result.bound
