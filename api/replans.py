"""/v1/plans/{id}/replans and /v1/replans: re-plan a finished plan after a change (device failures, budgets, jobs
added or removed, pins), moving as little as pays; always asynchronous, like frontiers."""

from __future__ import annotations

from typing import Any

from flask import request
from flask_openapi3 import APIBlueprint, Tag

from api.errors import ApiProblem, problem_doc
from api.guards import UNAUTHORIZED, V1_SECURITY, require_json_body, require_token
from api.resources import PLANS, REPLANS, accepted, cancel_or_delete, record_or_404, resource_doc, resource_response, submit
from api.schemas import AsyncSubmitHeaders, ReplanPath, ReplanResource, ReplanResourcePath
from optsched.replan import apply_change
from optsched.schema.workload import Workload

bp = APIBlueprint(
    "replans",
    __name__,
    url_prefix="/v1",
    abp_tags=[Tag(name="replans", description="Re-plan after failures and changes (optsched replan).")],
    abp_security=V1_SECURITY,
)
bp.before_request(require_token)
bp.before_request(require_json_body)


@bp.post(
    "/plans/<plan_id>/replans",
    operation_id="createReplan",
    summary="Re-plan a finished plan after a change",
    description="Body: a change document (`device_failures`, `device_repairs`, `budget_w`, `domains`, `add_jobs`, "
    "`remove_jobs`, `pin`; see the README). Validated against the plan's workload (`422` with paths), stored and "
    "queued: `202` with `Location: /v1/replans/{id}`. The new plan maximises the objective minus the cost of moving "
    "running jobs, and lists what changed per job. With `Idempotency-Key`, a retried request returns the first "
    "re-plan (`Idempotent-Replayed: true`).",
    responses={
        202: resource_doc(REPLANS, "Accepted and queued; poll `Location` until `status` is final."),
        400: problem_doc("The body is not valid JSON."),
        401: problem_doc(UNAUTHORIZED),
        404: problem_doc("No plan with this id."),
        409: problem_doc("The plan has no result yet (queued or solving) or ended without one."),
        413: problem_doc("The body is larger than OPTSCHED_MAX_BODY_MB."),
        415: problem_doc("The body is not `application/json`."),
        422: problem_doc("The change fails validation; `errors` lists every offending field."),
        503: problem_doc("The solve queue is full; retry after `Retry-After` seconds."),
    },
)
def create_replan(path: ReplanPath, header: AsyncSubmitHeaders):
    """Validate the change against the parent's workload, store, queue: 202."""
    parent = record_or_404(PLANS, path.plan_id)
    if parent.plan is None or not parent.status.final:
        raise ApiProblem(409, f"plan {path.plan_id!r} is {parent.status.value} and has no plan to re-plan from")
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
    responses={200: ReplanResource, 401: problem_doc(UNAUTHORIZED), 404: problem_doc("No re-plan with this id.")},
)
def get_replan(path: ReplanResourcePath):
    """The re-plan resource."""
    return resource_response(REPLANS, record_or_404(REPLANS, path.replan_id), 200)


@bp.delete(
    "/replans/<replan_id>",
    operation_id="deleteReplan",
    summary="Cancel or delete a re-plan",
    description="A queued or solving re-plan is cancelled: 200 with the resource. A finished one is deleted: 204.",
    responses={200: ReplanResource, 204: None, 401: problem_doc(UNAUTHORIZED), 404: problem_doc("No re-plan with this id.")},
)
def delete_replan(path: ReplanResourcePath):
    """Cancel an unfinished re-plan, delete a finished one."""
    return cancel_or_delete(REPLANS, path.replan_id)
