"""/v1/frontiers: the power-speedup frontier of a workload (always asynchronous), its plot, cancel or delete."""

from __future__ import annotations

from flask import request

from api.costs import check_at_most, check_solve, check_workload
from api.resources import (
    FRONTIERS,
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
from api.schemas import AsyncSubmitHeaders, FrontierPath, FrontierRequest
from optsched.explain.frontier import Frontier, plot_frontier
from optsched.infra.store import ResourceKind

bp = v1_blueprint("frontiers", __name__, "frontiers", "What each kilowatt buys (optsched frontier).")



@bp.post(
    "/frontiers",
    operation_id="createFrontier",
    summary="Submit a workload for its power-speedup frontier",
    description="Validates and stores the workload (and the budgets to plan, if given: `optsched.frontier`'s "
    "arguments), queues the sweep and answers 202 at once; poll `Location` until `status` is final (`done`: a "
    "curve; `infeasible`: none, `frontier.reason` says why). With `Idempotency-Key`, a retried request returns "
    "the first frontier (`Idempotent-Replayed: true`).",
    responses=submit_responses(FRONTIERS, "The workload or the budgets fail validation"),
)
def create_frontier(header: AsyncSubmitHeaders, body: FrontierRequest):
    """Store, queue: 202."""
    check_workload(body.workload, path="workload")
    check_at_most(len(body.budgets or ()), "MAX_BUDGETS", "budgets", "budgets")
    workload = request.get_json()["workload"]
    check_solve(ResourceKind.frontier, workload, body.params(), path="workload")
    record, created = submit(FRONTIERS, workload, body.params(), header.idempotency_key)
    return accepted(FRONTIERS, record, created)


@bp.get(
    "/frontiers/<frontier_id>",
    operation_id="getFrontier",
    summary="Get a frontier",
    description="The frontier resource: status, timestamps and, once done, the points, knee and saturation.",
    responses=get_responses(FRONTIERS),
)
def get_frontier(path: FrontierPath):
    """The frontier resource."""
    return resource_response(FRONTIERS, record_or_404(FRONTIERS, path.frontier_id), 200)


@bp.get(
    "/frontiers/<frontier_id>/plot.png",
    operation_id="getFrontierPlot",
    summary="The frontier's plot",
    description="Weighted speedup against the global budget (kW), the current budget and the knee marked, "
    "deadlines met below (the CLI's --png). 404 if it is unknown; 409 while it is queued or "
    "solving, or when it ended without a result or has no curve.",
    responses={200: png_doc("The frontier plot."), **chart_responses(FRONTIERS)},
)
def get_frontier_plot(path: FrontierPath):
    """plot.png of a finished frontier."""
    return chart_response(FRONTIERS, path.frontier_id, "plot.png", plot_frontier, missing=no_curve)


@bp.delete(
    "/frontiers/<frontier_id>",
    operation_id="deleteFrontier",
    summary="Cancel or delete a frontier",
    description="A queued or solving frontier is cancelled (its sweep is stopped): 200 with the resource, status "
    "`cancelled`. A finished one is deleted: 204.",
    responses=delete_responses(FRONTIERS),
)
def delete_frontier(path: FrontierPath):
    """Cancel an unfinished frontier, delete a finished one."""
    return cancel_or_delete(FRONTIERS, path.frontier_id)


def no_curve(result: Frontier) -> str | None:
    """Why a frontier has nothing to plot (None: it has a curve)."""
    return None if result.points else (result.reason or "no point was planned")
