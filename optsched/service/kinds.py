"""Every resource kind and how it is solved: the Python API each kind calls (the same calls the CLI makes), the
wall-time budget its solve gets, and `RUNNER`, which the solve queues (optsched.infra) are given to run them.

A worker process runs `solve_task`; it is a module-level function so that a spawned worker imports it by name.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from optsched.explain.frontier import MIN_POINTS, REFINE_POINTS, frontier
from optsched.explain.planning import plan
from optsched.infra.queue import Runner, SolveFunction, SolveTask, report_incumbent
from optsched.infra.store import PlanRecord, PlanState, ResourceKind, state_of
from optsched.night import plan_night
from optsched.night.milp import NIGHT_TIME_LIMIT_S
from optsched.queueing import analyze
from optsched.replan import replan
from optsched.schema.errors import InvalidWorkload
from optsched.schema.workload import Options
from optsched.solve.options import SolveOptions

log = logging.getLogger(__name__)

# Wall-time budgets of a queueing study (seconds): the cap search is bounded by the study's own limit on
# combinations; a simulation by its replications (bench/results/queueing.md has the measured times).
QUEUEING_ANALYTIC_BUDGET_S = 60.0
QUEUEING_SIMULATION_BUDGET_S = 300.0


@dataclass(frozen=True)
class Kind:
    """How a resource kind is solved: `solve` calls its Python API and returns (final state, result document);
    `budget_s(workload, params)` bounds its wall time, after which (plus the grace period) the solve is killed."""

    solve: Callable[[SolveTask], tuple[PlanState, dict[str, Any]]]
    budget_s: Callable[[dict[str, Any], dict[str, Any]], float]


def _solve_plan(task: SolveTask) -> tuple[PlanState, dict[str, Any]]:
    options = SolveOptions(threads=task.threads, on_incumbent=lambda best: report_incumbent(best.model_dump(mode="json")))
    result = plan(task.workload, options=options)
    return state_of(result.status), result.model_dump(mode="json")


def _solve_night(task: SolveTask) -> tuple[PlanState, dict[str, Any]]:
    result = plan_night(task.workload, **task.params)
    return state_of(result.status), result.model_dump(mode="json", by_alias=True)


def _solve_frontier(task: SolveTask) -> tuple[PlanState, dict[str, Any]]:
    result = frontier(task.workload, **task.params)
    return (PlanState.done if result.points else PlanState.infeasible), result.model_dump(mode="json")


def _solve_queueing(task: SolveTask) -> tuple[PlanState, dict[str, Any]]:
    result = analyze(task.workload, **task.params)
    return (PlanState.done if result.ok else PlanState.infeasible), result.model_dump(mode="json")


def _queueing_budget_s(workload: dict[str, Any], params: dict[str, Any]) -> float:
    """The analytic evaluation takes milliseconds per cap combination; a simulation, its replications."""
    if params.get("method") == "simulation":
        return QUEUEING_SIMULATION_BUDGET_S
    return QUEUEING_ANALYTIC_BUDGET_S


def _solve_replan(task: SolveTask) -> tuple[PlanState, dict[str, Any]]:
    document = task.workload
    result = replan(document["workload"], document["plan"], document["change"], threads=task.threads)
    return state_of(result.plan.status), result.model_dump(mode="json")


def _replan_budget_s(workload: dict[str, Any], params: dict[str, Any]) -> float:
    """The re-plan solves the changed workload once (its own time limit) and may diagnose it."""
    return 2 * _time_limit_s(workload.get("workload") if isinstance(workload, dict) else None)


def _plan_budget_s(workload: dict[str, Any], params: dict[str, Any]) -> float:
    """One solve: the workload's own time limit (what the planner uses)."""
    return _time_limit_s(workload)


def _night_budget_s(workload: dict[str, Any], params: dict[str, Any]) -> float:
    """One event solve's time limit per event the night can have: each job released and finished, each power
    window starting and ending, the start and the end."""
    options, power = workload.get("options"), workload.get("power")
    given = isinstance(options, dict) and "time_limit_s" in options
    per_event = _time_limit_s(workload) if given else NIGHT_TIME_LIMIT_S
    windows = (power.get("windows") or []) if isinstance(power, dict) else []
    return per_event * (2 * len(workload.get("jobs") or []) + 2 * len(windows) + 2)


def _frontier_budget_s(workload: dict[str, Any], params: dict[str, Any]) -> float:
    """One solve's time limit per point, plus the unlimited plan and the least-feasible-budget probe."""
    points = len(params.get("budgets") or []) or MIN_POINTS + REFINE_POINTS
    return _time_limit_s(workload) * (points + 2)


# Every resource kind and how it is solved (tests check that each ResourceKind has one).
KINDS: dict[ResourceKind, Kind] = {
    ResourceKind.plan: Kind(solve=_solve_plan, budget_s=_plan_budget_s),
    ResourceKind.night: Kind(solve=_solve_night, budget_s=_night_budget_s),
    ResourceKind.frontier: Kind(solve=_solve_frontier, budget_s=_frontier_budget_s),
    ResourceKind.queueing: Kind(solve=_solve_queueing, budget_s=_queueing_budget_s),
    ResourceKind.replan: Kind(solve=_solve_replan, budget_s=_replan_budget_s),
}


def solve_task(task: SolveTask) -> tuple[str, Any]:
    """Run the task's kind in a worker process: ("result", (state, document)), ("invalid", field errors) or
    ("error", message); it never raises."""
    try:
        state, document = KINDS[task.kind].solve(task)
    except InvalidWorkload as exc:
        return "invalid", [{"path": e.path, "message": e.message} for e in exc.errors]
    except Exception as exc:  # noqa: BLE001 - the worker reports every failure instead of dying
        log.exception("%s solve failed", task.kind)
        return "error", f"the {task.kind} solve failed: {type(exc).__name__}: {exc}"
    return "result", (state.value, document)


def budget_s(record: PlanRecord) -> float:
    """Wall-time bound of a record's solve (its kind's `budget_s`); a malformed document falls back to the default
    time limit, since the solve will report it invalid at once."""
    try:
        return float(KINDS[record.kind].budget_s(record.workload or {}, dict(record.params or {})))
    except (AttributeError, TypeError, ValueError):
        return _time_limit_s(None)




def _time_limit_s(workload: dict[str, Any] | None) -> float:
    """The workload's own time limit (what the planner uses), without validating the whole workload again."""
    try:
        return float((workload or {}).get("options", {}).get("time_limit_s", Options().time_limit_s))
    except (AttributeError, TypeError, ValueError):
        return Options().time_limit_s


def runner(solve: SolveFunction = solve_task) -> Runner:
    """What a solve queue runs: `solve` in its worker processes (tests pass stand-ins), budgets from KINDS."""
    return Runner(solve=solve, budget_s=budget_s)


RUNNER = runner()
