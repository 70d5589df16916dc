"""/v1/plans: submit a workload, follow its plan, list, cancel or delete."""

from __future__ import annotations

import threading

from flask import current_app, request

from api.costs import check_solve, check_workload
from api.errors import ApiProblem, problem_doc
from api.guards import UNAUTHORIZED
from api.resources import (
    PLANS,
    cancel_or_delete,
    delete_responses,
    get_responses,
    resource_doc,
    resource_response,
    submit,
    submit_responses,
    v1_blueprint,
)
from api.schemas import ListQuery, PlanList, PlanPath, PlanSummary, SubmitHeaders
from api.services import services
from optsched.infra.store import PlanRecord, PlanState, ResourceKind
from optsched.schema.workload import Workload

bp = v1_blueprint("plans", __name__, "plans", "Submit workloads and follow their plans.")


@bp.post(
    "/plans",
    operation_id="createPlan",
    summary="Submit a workload for planning",
    description="Validates and stores the workload and queues its solve, then waits up to OPTSCHED_SYNC_WAIT_S: "
    "201 with the plan if it is done by then, else 202; either way `Location` is the plan's URL. "
    "`Prefer: respond-async` answers 202 at once. With `Idempotency-Key`, a retried request returns the plan the "
    "first one created (`Idempotent-Replayed: true`) instead of solving again.",
    responses=submit_responses(PLANS, "The workload fails validation", {
        201: resource_doc(PLANS, "The solve finished within OPTSCHED_SYNC_WAIT_S: the finished plan."),
        202: resource_doc(PLANS, "Accepted and queued or solving; poll `Location` until `status` is final."),
    }),
)
def create_plan(header: SubmitHeaders, body: Workload):
    """Store, queue, wait a little: 201 with the plan, or 202 to poll (see the description above)."""
    check_workload(body)
    check_solve(ResourceKind.plan, request.get_json(), {})
    record, created = submit(PLANS, request.get_json(), {}, header.idempotency_key)
    respond_async = _prefers_async(header.prefer)
    if not respond_async and not record.status.final:
        record = _wait_for_solve(record)
    response = resource_response(PLANS, record, 201 if record.status.final else 202)
    if respond_async:
        response.headers["Preference-Applied"] = "respond-async"
    if not created:
        response.headers["Idempotent-Replayed"] = "true"
    return response


@bp.get(
    "/plans/<plan_id>",
    operation_id="getPlan",
    summary="Get a plan",
    description="The plan resource: status, submitted/started/finished timestamps and, once there is one, the plan.",
    responses=get_responses(PLANS),
)
def get_plan(path: PlanPath):
    """The plan resource."""
    return resource_response(PLANS, _record_or_404(path.plan_id), 200)


@bp.get(
    "/plans",
    operation_id="listPlans",
    summary="List plans, newest first",
    description="Plan summaries (without the plan), newest first; pass `next_cursor` as `cursor` for the next "
    "page, `status` to filter.",
    responses={
        200: PlanList,
        401: problem_doc(UNAUTHORIZED),
        422: problem_doc("A query parameter is invalid (for example a cursor this service did not return)."),
    },
)
def list_plans(query: ListQuery):
    """One page of plan summaries."""
    status = PlanState(query.status.value) if query.status is not None else None
    records, next_cursor = services().store.list(
        limit=query.limit, cursor=query.cursor, status=status, kind=ResourceKind.plan
    )
    page = PlanList(items=[PlanSummary.of(r) for r in records], next_cursor=next_cursor)
    return page.model_dump(mode="json")


@bp.delete(
    "/plans/<plan_id>",
    operation_id="deletePlan",
    summary="Cancel or delete a plan",
    description="A queued or solving plan is cancelled (its solve is stopped): 200 with the resource, status "
    "`cancelled`. A finished plan is deleted: 204.",
    responses=delete_responses(PLANS),
)
def delete_plan(path: PlanPath):
    """Cancel an unfinished plan, delete a finished one."""
    return cancel_or_delete(PLANS, path.plan_id)


def _wait_for_solve(record: PlanRecord) -> PlanRecord:
    """The record after waiting up to SYNC_WAIT_S for its solve, if one of SYNC_WAIT_SLOTS is free; else at once
    (a 202). Waiting holds an HTTP thread, so the threads beyond the slots stay free for reads and /healthz."""
    slots = current_app.extensions.setdefault(
        "optsched.sync_wait_slots", threading.BoundedSemaphore(current_app.config["SYNC_WAIT_SLOTS"])
    )
    if not slots.acquire(blocking=False):
        return record
    try:
        return services().queue.wait(record.id, current_app.config["SYNC_WAIT_S"]) or record
    finally:
        slots.release()


def _record_or_404(plan_id: str) -> PlanRecord:
    record = services().store.get(plan_id, kind=ResourceKind.plan)
    if record is None:
        raise ApiProblem(404, f"no plan {plan_id!r}; list plans with GET /v1/plans")
    return record


def _prefers_async(prefer: str | None) -> bool:
    """RFC 7240: `Prefer` holds comma-separated preferences, each `token[=value][; params]`."""
    if not prefer:
        return False
    return any(p.split(";")[0].split("=")[0].strip().lower() == "respond-async" for p in prefer.split(","))
