"""/v1/plans/{id}/replans and /v1/replans: re-plan a finished plan after a change (device failures, budgets, jobs
added or removed, pins), moving as little as pays; always asynchronous, like frontiers."""

from __future__ import annotations

from typing import Any

from flask import request

from api.errors import ApiProblem, problem_doc
from api.resources import (
    PLANS,
    REPLANS,
    accepted,
    cancel_or_delete,
    delete_responses,
    get_responses,
    record_or_404,
    resource_response,
    submit,
    submit_responses,
    v1_blueprint,
)
from api.schemas import AsyncSubmitHeaders, ReplanPath, ReplanResourcePath
from optsched.replan import Change, apply_change
from optsched.schema.workload import Workload

bp = v1_blueprint("replans", __name__, "replans", "Re-plan after failures and changes (optsched replan).")


@bp.post(
    "/plans/<plan_id>/replans",
    operation_id="createReplan",
    summary="Re-plan a finished plan after a change",
    description="Body: a change document (`device_failures`, `device_repairs`, `budget_w`, `domains`, `add_jobs`, "
    "`remove_jobs`, `pin`; see the README). Validated against the plan's workload (`422` with paths), stored and "
    "queued: `202` with `Location: /v1/replans/{id}`. The new plan maximises the objective minus the cost of moving "
    "running jobs, and lists what changed per job. With `Idempotency-Key`, a retried request returns the first "
    "re-plan (`Idempotent-Replayed: true`).",
    responses=submit_responses(REPLANS, "The change fails validation", {
        404: problem_doc("No plan with this id."),
        409: problem_doc("The plan has no result yet (queued or solving) or ended without one."),
    }),
)
def create_replan(path: ReplanPath, header: AsyncSubmitHeaders, body: Change):
    """Validate the change against the parent's workload, store, queue: 202."""
    parent = record_or_404(PLANS, path.plan_id)
    if parent.plan is None or not parent.status.final:
        raise ApiProblem(409, f"plan {path.plan_id!r} is {parent.status.value} and has no plan to re-plan from")
    # The raw document, not `body`: Change.load also checks what the model alone cannot (ids listed twice).
    change: Any = request.get_json()
    apply_change(Workload.load(parent.workload), change)  # InvalidChange: 422 with the paths in the change
    document = {"workload": parent.workload, "plan": parent.plan, "change": change}
    record, created = submit(REPLANS, document, {"parent": parent.id}, header.idempotency_key)
    return accepted(REPLANS, record, created)


@bp.get(
    "/replans/<replan_id>",
    operation_id="getReplan",
    summary="Get a re-plan",
    description="The re-plan resource: its parent, status, timestamps and, once solved, the new plan (verify it "
    "against `replan.workload`, the changed workload) with the changes job by job and the restart hours.",
    responses=get_responses(REPLANS),
)
def get_replan(path: ReplanResourcePath):
    """The re-plan resource."""
    return resource_response(REPLANS, record_or_404(REPLANS, path.replan_id), 200)


@bp.delete(
    "/replans/<replan_id>",
    operation_id="deleteReplan",
    summary="Cancel or delete a re-plan",
    description="A queued or solving re-plan is cancelled: 200 with the resource. A finished one is deleted: 204.",
    responses=delete_responses(REPLANS),
)
def delete_replan(path: ReplanResourcePath):
    """Cancel an unfinished re-plan, delete a finished one."""
    return cancel_or_delete(REPLANS, path.replan_id)
