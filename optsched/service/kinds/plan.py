"""Plans: `optsched.plan(workload)`, answered within OPTSCHED_SYNC_WAIT_S when the solve is quick."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from optsched.explain.planning import plan
from optsched.infra.queue import SolveTask, report_incumbent
from optsched.infra.store import PlanRecord
from optsched.schema.limits import check_size
from optsched.schema.plan import Plan, Status
from optsched.schema.workload import Workload
from optsched.service.kinds.base import Document, KindSpec, Submission, Texts, check_solve_budget, time_limit_s
from optsched.service.settings import limits_of
from optsched.solve.options import SolveOptions


def solve(task: SolveTask) -> Plan:
    """One solve; each improved plan is reported while it runs, so a killed solve keeps its incumbent."""
    options = SolveOptions(
        threads=task.threads, on_incumbent=lambda best: report_incumbent(best.model_dump(mode="json"))
    )
    return plan(task.workload, options=options)


def verdict(result: Plan) -> str:
    return result.status.value


def budget_s(workload: Document, params: Document) -> float:
    """One solve: the workload's own time limit (what the planner uses)."""
    return time_limit_s(workload)


def prepare(body: Workload, raw: Any, settings: Mapping[str, Any], parent: PlanRecord | None) -> Submission:
    check_size(body, limits_of(settings))
    check_solve_budget(SPEC, raw, {}, settings["MAX_SOLVE_S"])
    return Submission(raw)


SPEC = KindSpec(
    name="plan",
    noun="plan",
    collection="plans",
    camel="Plan",
    id_param="plan_id",
    request=Workload,
    result=Plan,
    result_field="plan",
    solve=solve,
    verdict=verdict,
    budget_s=budget_s,
    verdicts=tuple(s.value for s in Status),
    prepare=prepare,
    page="plan.html",
    sync=True,
    listed=True,
    texts=Texts(
        tag="plans",
        tag_description="Submit workloads and follow their plans.",
        submit_summary="Submit a workload for planning",
        submit_description="Validates and stores the workload and queues its solve, then waits up to "
        "OPTSCHED_SYNC_WAIT_S: 201 with the plan if it is done by then, else 202; either way `Location` is the plan's "
        "URL. `Prefer: respond-async` answers 202 at once. With `Idempotency-Key`, a retried request returns the plan "
        "the first one created (`Idempotent-Replayed: true`) instead of solving again.",
        invalid="The workload fails validation",
        get_description="The plan resource: status, submitted/started/finished timestamps and, once there is one, "
        "the plan.",
        delete_description="A queued or solving plan is cancelled (its solve is stopped): 200 with the resource, "
        "status `cancelled`. A finished plan is deleted: 204.",
        resource_description="A submitted plan: its status, the scheduling timestamps, and the plan once there is "
        "one.",
        status_description="queued and solving are transient; the others are final.",
        result_description="The plan. While solving: the best plan so far (status `time_limit`, with its bound and "
        "gap), or null before the first; null if it failed.",
    ),
)
