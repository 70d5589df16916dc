"""Queueing studies: `optsched.queueing.analyze(study, method=..., seed=...)`, power against response time."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from optsched.charts import queueing_front_png
from optsched.infra.queue import SolveTask
from optsched.infra.store import PlanRecord
from optsched.queueing import Method, StudyResult, analyze, load_study
from optsched.schema.errors import InvalidStudy
from optsched.service.kinds.base import Chart, Document, KindSpec, Submission, Texts, under

# Wall-time budgets of a queueing study (seconds): the cap search is bounded by the study's own limit on
# combinations; a simulation by its replications (bench/results/queueing.md has the measured times).
QUEUEING_ANALYTIC_BUDGET_S = 60.0
QUEUEING_SIMULATION_BUDGET_S = 300.0


class QueueingStudyRequest(BaseModel):
    """`optsched.queueing.analyze(study, method=..., seed=...)` as a request body (the study format is in the \
README)."""

    model_config = ConfigDict(extra="forbid")

    study: dict[str, Any] = Field(description="The study document (validated in full, errors name `study.<path>`).")
    method: Method = Field(
        default=Method.analytic, description="analytic (closed forms / approximation) or simulation."
    )
    seed: int = Field(
        default=0, ge=0, le=2**31 - 1, strict=True, description="Seed of the simulation's random streams."
    )

    def params(self) -> Document:
        return {"method": self.method.value, "seed": self.seed}


def solve(task: SolveTask) -> StudyResult:
    return analyze(task.workload, **task.params)


def verdict(result: StudyResult) -> str:
    """`done`: stable and meeting its targets; `infeasible`: not."""
    return "done" if result.ok else "infeasible"


def budget_s(study: Document, params: Document) -> float:
    """The analytic evaluation takes milliseconds per cap combination; a simulation, its replications."""
    if params.get("method") == "simulation":
        return QUEUEING_SIMULATION_BUDGET_S
    return QUEUEING_ANALYTIC_BUDGET_S


def prepare(body: QueueingStudyRequest, raw: Any, settings: Mapping[str, Any], parent: PlanRecord | None) -> Submission:
    """The whole study is validated before it is stored (errors under `study.`)."""
    try:
        load_study(body.study)
    except InvalidStudy as exc:
        raise InvalidStudy(under("study", exc.errors)) from None
    return Submission(body.study, body.params())


def no_front(result: StudyResult) -> str | None:
    """Why a study has nothing to plot (None: it has a front)."""
    return None if result.front else (result.reason or "the study evaluated no caps")


SPEC = KindSpec(
    name="queueing",
    noun="queueing study",
    collection="queueing-studies",
    camel="QueueingStudy",
    id_param="study_id",
    request=QueueingStudyRequest,
    result=StudyResult,
    result_field="result",
    solve=solve,
    verdict=verdict,
    budget_s=budget_s,
    verdicts=("done", "infeasible"),
    prepare=prepare,
    page="queueing.html",
    charts=(
        Chart(
            file="plot.png",
            draw=queueing_front_png,
            missing=no_front,
            operation="Plot",
            summary="The study's power-response front",
            description="Mean power against the high-priority class's mean response along the Pareto front, chosen "
            "caps starred (the CLI's --png). 404 if the study is unknown; 409 while it is queued or solving, or when "
            "it ended without a result or has no front.",
            what="The front plot.",
        ),
    ),
    texts=Texts(
        tag="queueing studies",
        tag_description="Power against response time per priority (optsched queueing).",
        submit_summary="Submit a queueing study",
        submit_description="Validates and stores the study, queues its analysis and answers 202 at once; poll "
        "`Location` until `status` is final (`done`: stable and meeting its targets; `infeasible`: not, "
        "`result.reason` says why). With `Idempotency-Key`, a retried request returns the first study "
        "(`Idempotent-Replayed: true`).",
        invalid="The study fails validation",
        get_description="The study resource: status, timestamps and, once done, per-class waits and responses, mean "
        "power, the caps and the Pareto front.",
        delete_description="A queued or running study is cancelled: 200 with the resource, status `cancelled`. A "
        "finished one is deleted: 204.",
        resource_description="A submitted queueing study: its status, the scheduling timestamps and, once done, "
        "the result.",
        status_description="queued and solving are transient; done: stable and meets its targets; infeasible: "
        "unstable or no caps meet the targets (result.reason says why).",
        result_description="The study's result; null until it is analysed.",
    ),
)
