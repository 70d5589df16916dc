"""/v1/night-plans: plan a night's queue as a timeline (always asynchronous), follow it, get its charts, cancel."""

from __future__ import annotations

from flask import request

from api.costs import check_at_most, check_solve, check_workload
from api.resources import (
    NIGHT_PLANS,
    accepted,
    cancel_or_delete,
    chart_response,
    chart_responses,
    delete_responses,
    get_responses,
    png_doc,
    record_or_404,
    resource_response,
    submit,
    submit_responses,
    v1_blueprint,
)
from api.schemas import AsyncSubmitHeaders, NightPlanPath, NightPlanRequest
from optsched.charts import gantt_png, power_png
from optsched.infra.store import ResourceKind
from optsched.night import validate_night
from optsched.schema.errors import FieldError, InvalidWorkload

bp = v1_blueprint("night_plans", __name__, "night-plans", "Plan a night's queue as a timeline (optsched night).")

# Request fields that are plan_night's own arguments; every other path is inside the queue.
ARGUMENTS = ("start", "hours", "preempt", "restart_hours")


@bp.post(
    "/night-plans",
    operation_id="createNightPlan",
    summary="Submit a night's queue for planning",
    description="Validates and stores the queue with start, hours, preempt and restart_hours (the arguments of "
    "`optsched.plan_night` and `optsched night`), queues it and answers 202 at once; poll `Location` until "
    "`status` is final (`met`: every hard deadline met, `missed`: a complete timeline with misses). With "
    "`Idempotency-Key`, a retried request returns the first night plan (`Idempotent-Replayed: true`).",
    responses=submit_responses(NIGHT_PLANS, "The queue or an argument fails validation"),
)
def create_night_plan(header: AsyncSubmitHeaders, body: NightPlanRequest):
    """Validate (budgets against idle draw too), store, queue: 202."""
    check_workload(body.queue, path="queue")
    check_at_most(body.hours, "MAX_NIGHT_HOURS", "hours", "hours")
    queue = request.get_json()["queue"]
    check_solve(ResourceKind.night, queue, body.params(), path="queue")
    try:
        validate_night(queue, start=body.start, hours=body.hours, restart_hours=body.restart_hours)
    except InvalidWorkload as exc:
        raise InvalidWorkload([_in_request(e) for e in exc.errors]) from None
    record, created = submit(NIGHT_PLANS, queue, body.params(), header.idempotency_key)
    return accepted(NIGHT_PLANS, record, created)


@bp.get(
    "/night-plans/<night_plan_id>",
    operation_id="getNightPlan",
    summary="Get a night plan",
    description="The night plan resource: status, timestamps and, once done, the timeline with its summary.",
    responses=get_responses(NIGHT_PLANS),
)
def get_night_plan(path: NightPlanPath):
    """The night plan resource."""
    return resource_response(NIGHT_PLANS, record_or_404(NIGHT_PLANS, path.night_plan_id), 200)


@bp.get(
    "/night-plans/<night_plan_id>/gantt.png",
    operation_id="getNightPlanGantt",
    summary="The night plan's Gantt chart",
    description="One row per device, bars coloured by job, deadline markers (the CLI's gantt.png). 404 if the "
    "night plan is unknown; 409 while it is queued or solving, or when it ended without a timeline or is too large "
    "to draw.",
    responses={200: png_doc("The Gantt chart."), **chart_responses(NIGHT_PLANS)},
)
def get_night_plan_gantt(path: NightPlanPath):
    """gantt.png of a finished night plan."""
    return chart_response(NIGHT_PLANS, path.night_plan_id, "gantt.png", gantt_png)


@bp.get(
    "/night-plans/<night_plan_id>/power.png",
    operation_id="getNightPlanPower",
    summary="The night plan's power over the night",
    description="Fleet and per-domain draw against the budgets in force (the CLI's power.png); status codes as "
    "for gantt.png.",
    responses={200: png_doc("Power over the night."), **chart_responses(NIGHT_PLANS)},
)
def get_night_plan_power(path: NightPlanPath):
    """power.png of a finished night plan."""
    return chart_response(NIGHT_PLANS, path.night_plan_id, "power.png", power_png)


@bp.delete(
    "/night-plans/<night_plan_id>",
    operation_id="deleteNightPlan",
    summary="Cancel or delete a night plan",
    description="A queued or solving night plan is cancelled (its solve is stopped): 200 with the resource, status "
    "`cancelled`. A finished one is deleted: 204.",
    responses=delete_responses(NIGHT_PLANS),
)
def delete_night_plan(path: NightPlanPath):
    """Cancel an unfinished night plan, delete a finished one."""
    return cancel_or_delete(NIGHT_PLANS, path.night_plan_id)


def _in_request(error: FieldError) -> FieldError:
    """plan_night's paths are relative to the queue, except its own arguments."""
    if error.path.split(".")[0].split("[")[0] in ARGUMENTS:
        return error
    return FieldError(f"queue.{error.path}" if error.path else "queue", error.message)
