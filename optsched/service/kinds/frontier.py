"""Frontiers: `optsched.frontier(workload, budgets=...)`, what each kilowatt buys."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from optsched.explain.frontier import MIN_POINTS, REFINE_POINTS, Frontier, frontier, plot_frontier
from optsched.infra.queue import SolveTask
from optsched.infra.store import PlanRecord
from optsched.schema.limits import check_size
from optsched.schema.workload import Workload
from optsched.service.kinds.base import (
    Chart,
    Document,
    KindSpec,
    PublishedLimit,
    Submission,
    Texts,
    check_at_most,
    check_solve_budget,
    time_limit_s,
)
from optsched.service.settings import limits_of

# The most budgets any server accepts; a server's own, lower OPTSCHED_MAX_BUDGETS is checked in `prepare`.
MAX_BUDGETS = 1_000


class FrontierRequest(BaseModel):
    """`optsched.frontier(workload, budgets=...)` as a request body."""

    model_config = ConfigDict(extra="forbid")

    workload: Workload
    budgets: list[Annotated[float, Field(gt=0, allow_inf_nan=False, strict=True)]] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_BUDGETS,
        description="Global budgets to plan, in watts; left out, the sweep finds its own (at least 12 points, "
        "denser where the curve bends).",
    )

    def params(self) -> Document:
        return {"budgets": self.budgets}


def solve(task: SolveTask) -> Frontier:
    return frontier(task.workload, **task.params)


def verdict(result: Frontier) -> str:
    """`done`: a curve; `infeasible`: no plan even without a global budget."""
    return "done" if result.points else "infeasible"


def budget_s(workload: Document, params: Document) -> float:
    """One solve's time limit per point, plus the unlimited plan and the least-feasible-budget probe."""
    points = len(params.get("budgets") or []) or MIN_POINTS + REFINE_POINTS
    return time_limit_s(workload) * (points + 2)


def prepare(body: FrontierRequest, raw: Any, settings: Mapping[str, Any], parent: PlanRecord | None) -> Submission:
    check_size(body.workload, limits_of(settings), path="workload")
    check_at_most(len(body.budgets or ()), settings, "MAX_BUDGETS", "budgets", "budgets")
    workload = raw["workload"]
    check_solve_budget(SPEC, workload, body.params(), settings["MAX_SOLVE_S"], path="workload")
    return Submission(workload, body.params())


def no_curve(result: Frontier) -> str | None:
    """Why a frontier has nothing to plot (None: it has a curve)."""
    return None if result.points else (result.reason or "no point was planned")


SPEC = KindSpec(
    name="frontier",
    noun="frontier",
    collection="frontiers",
    camel="Frontier",
    id_param="frontier_id",
    request=FrontierRequest,
    result=Frontier,
    result_field="frontier",
    solve=solve,
    verdict=verdict,
    budget_s=budget_s,
    verdicts=("done", "infeasible"),
    prepare=prepare,
    page="frontier.html",
    charts=(
        Chart(
            file="plot.png",
            draw=plot_frontier,
            missing=no_curve,
            operation="Plot",
            summary="The frontier's plot",
            description="Weighted speedup against the global budget (kW), the current budget and the knee marked, "
            "deadlines met below (the CLI's --png). 404 if it is unknown; 409 while it is queued or "
            "solving, or when it ended without a result or has no curve.",
            what="The frontier plot.",
        ),
    ),
    limits=(PublishedLimit("FrontierRequest", "budgets", "maxItems", "MAX_BUDGETS"),),
    texts=Texts(
        tag="frontiers",
        tag_description="What each kilowatt buys (optsched frontier).",
        submit_summary="Submit a workload for its power-speedup frontier",
        submit_description="Validates and stores the workload (and the budgets to plan, if given: "
        "`optsched.frontier`'s arguments), queues the sweep and answers 202 at once; poll `Location` until `status` "
        "is final (`done`: a curve; `infeasible`: none, `frontier.reason` says why). With `Idempotency-Key`, a "
        "retried request returns the first frontier (`Idempotent-Replayed: true`).",
        invalid="The workload or the budgets fail validation",
        get_description="The frontier resource: status, timestamps and, once done, the points, knee and saturation.",
        delete_description="A queued or solving frontier is cancelled (its sweep is stopped): 200 with the resource, "
        "status `cancelled`. A finished one is deleted: 204.",
        resource_description="A submitted frontier: its status, the scheduling timestamps and, once there is one, "
        "the frontier.",
        status_description="queued and solving are transient; done: a curve; infeasible: no curve (see "
        "frontier.reason).",
        result_description="The frontier; null until the sweep ends.",
    ),
)
