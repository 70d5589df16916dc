"""Every resource kind, one module each, and the registry built from them: `KINDS` by name. The REST face derives
its routes from it (api/kinds.py), `runner()` gives the solve queues (optsched.infra) what to run.

Adding a kind is one module here declaring its `SPEC` (see base.py: request, result, solve, budget, verdicts,
charts, page) and one line in `KINDS`. A worker process runs `solve_task`, a module-level function, so that a
spawned worker imports it by name.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from optsched.infra.queue import Runner, SolveFunction, SolveTask
from optsched.infra.store import OVERRUN_VERDICTS, UNFINISHED, JobState, PlanRecord
from optsched.schema.errors import InvalidWorkload
from optsched.service.kinds import frontier, night_plan, plan, queueing, replan
from optsched.service.kinds.base import KindSpec, time_limit_s
from optsched.service.settings import apply_solver_log, load_settings

log = logging.getLogger(__name__)

KINDS: dict[str, KindSpec] = {
    spec.name: spec for spec in (plan.SPEC, night_plan.SPEC, frontier.SPEC, queueing.SPEC, replan.SPEC)
}


def register(spec: KindSpec) -> KindSpec:
    """Add a kind (a test's, or a plugin's) to the registry; its name, collection and camel name must be new."""
    taken = [other.name for other in KINDS.values() if {spec.name, spec.collection, spec.camel} & {
        other.name, other.collection, other.camel}]
    if taken:
        raise ValueError(f"kind {spec.name!r} clashes with the registered kind(s) {', '.join(taken)}")
    KINDS[spec.name] = spec
    return spec


def kind(name: str) -> KindSpec:
    """The kind of this name (KeyError names the kinds there are)."""
    try:
        return KINDS[name]
    except KeyError:
        raise KeyError(f"no resource kind {name!r}; the kinds are {', '.join(KINDS)}") from None


def _verdict_order() -> tuple[str, ...]:
    """Every verdict of every kind, in the order the kinds declare them (the order the API documents them)."""
    order: dict[str, None] = {}
    for spec in KINDS.values():
        order.update(dict.fromkeys(spec.verdicts))
    order.update(dict.fromkeys(OVERRUN_VERDICTS))
    return tuple(order)


def statuses_of(spec: KindSpec) -> tuple[str, ...]:
    """Every status a resource of this kind can show: queued and solving, its verdicts, the verdicts of a solve
    stopped past its budget (`no_solution` for every kind), cancelled and failed."""
    reachable = {*spec.verdicts, OVERRUN_VERDICTS[1]}
    verdicts = (v for v in _verdict_order() if v in reachable)
    return (*(s.value for s in UNFINISHED), *verdicts, JobState.cancelled.value, JobState.failed.value)


def final_statuses(spec: KindSpec) -> tuple[str, ...]:
    """The statuses a finished, cancelled or failed resource of this kind shows."""
    unfinished = {s.value for s in UNFINISHED}
    return tuple(s for s in statuses_of(spec) if s not in unfinished)


def solve_task(task: SolveTask) -> tuple[str, Any]:
    """Run the task's kind in a worker process: ("result", (verdict, document)), ("invalid", field errors) or
    ("error", message); it never raises. A result larger than OPTSCHED_MAX_RESULT_MB is an error saying so: it is
    measured here, before it leaves the worker, so no queue stores it (nor half of it)."""
    try:
        settings = load_settings()
        apply_solver_log(settings)
        spec = kind(task.kind)
        result = spec.solve(task)
        verdict, document = spec.verdict(result), result.model_dump(mode="json", by_alias=True)
        too_large = result_too_large(document, settings["MAX_RESULT_MB"], spec.noun)
    except InvalidWorkload as exc:
        return "invalid", [{"path": e.path, "message": e.message} for e in exc.errors]
    except Exception as exc:  # noqa: BLE001 - the worker reports every failure instead of dying
        log.exception("%s solve failed", task.kind)
        return "error", f"the {task.kind} solve failed: {type(exc).__name__}: {exc}"
    if too_large is not None:
        log.warning("%s result not stored: %s", task.kind, too_large)
        return "error", too_large
    return "result", (verdict, document)


def result_too_large(document: Any, max_mb: float, noun: str = "result") -> str | None:
    """Why `document` is not stored (its JSON is above `max_mb` MB, OPTSCHED_MAX_RESULT_MB), or None."""
    size = len(json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode())
    if size <= max_mb * 1_000_000:
        return None
    return (f"the {noun}'s result is {size:,} bytes of JSON, above the limit of {max_mb:g} MB "
            "(OPTSCHED_MAX_RESULT_MB); it was not stored: make the request smaller (fewer jobs, devices or points)")


def budget_s(record: PlanRecord) -> float:
    """Wall-time bound of a record's solve (its kind's `budget_s`); a malformed document falls back to the default
    time limit, since the solve will report it invalid at once."""
    try:
        return float(kind(record.kind).budget_s(record.workload or {}, dict(record.params or {})))
    except (AttributeError, TypeError, ValueError):
        return time_limit_s(None)


def runner(solve: SolveFunction = solve_task) -> Runner:
    """What a solve queue runs: `solve` in its worker processes (tests pass stand-ins), budgets from KINDS."""
    return Runner(solve=solve, budget_s=budget_s)


RUNNER = runner()

__all__ = [
    "KINDS", "RUNNER", "KindSpec", "budget_s", "final_statuses", "kind", "register", "result_too_large", "runner",
    "solve_task", "statuses_of",
]
