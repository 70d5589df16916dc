"""Queueing studies: `optsched.queueing.analyze(study, method=..., seed=...)`, power against response time."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from optsched.charts import queueing_front_png
from optsched.infra.queue import SolveTask
from optsched.infra.store import PlanRecord
from optsched.queueing import Method, StudyResult, analyze, check_study
from optsched.queueing.exact import ExactBudget
from optsched.queueing.study import StudyLimits
from optsched.schema.errors import FieldError, InvalidStudy
from optsched.service.kinds.base import Chart, Document, KindSpec, Submission, Texts, under
from optsched.service.settings import limits_of

# Wall-time budgets of a queueing study (seconds): the cap search is bounded by the study's limit on
# combinations, the exact checks by OPTSCHED_QUEUEING_EXACT_S and _EXACT_STUDY_S (two phases of at most 20 s by
# default, each overrunning by at most one evaluation); a simulation by its work limit (bench/results/queueing.md
# has the measured times).
QUEUEING_ANALYTIC_BUDGET_S = 90.0
QUEUEING_SIMULATION_BUDGET_S = 720.0


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
    """The study under the limits its submission stored (`bounds`, from the service's settings)."""
    params = dict(task.params)
    bounds = params.pop("bounds", {})
    return analyze(
        task.workload,
        **params,
        exact=ExactBudget(
            max_states=bounds.get("max_states", ExactBudget.max_states),
            time_s=bounds.get("exact_s", ExactBudget.time_s),
            study_s=bounds.get("exact_study_s", ExactBudget.study_s),
        ),
        study_limits=StudyLimits(
            classes=bounds.get("classes", StudyLimits.classes),
            combinations=bounds.get("combinations", StudyLimits.combinations),
            simulation_work=bounds.get("simulation_work", StudyLimits.simulation_work),
        ),
    )


def study_limits(settings: Mapping[str, Any]) -> StudyLimits:
    return StudyLimits(
        classes=settings["QUEUEING_MAX_CLASSES"],
        combinations=settings["QUEUEING_MAX_COMBINATIONS"],
        simulation_work=settings["QUEUEING_MAX_SIMULATION_WORK"],
    )


def verdict(result: StudyResult) -> str:
    """`done`: stable and meeting its targets; `infeasible`: not."""
    return "done" if result.ok else "infeasible"


def budget_s(study: Document, params: Document) -> float:
    """The analytic evaluation takes milliseconds per cap combination; a simulation, its replications."""
    if params.get("method") == "simulation":
        return QUEUEING_SIMULATION_BUDGET_S
    return QUEUEING_ANALYTIC_BUDGET_S


def prepare(body: QueueingStudyRequest, raw: Any, settings: Mapping[str, Any], parent: PlanRecord | None) -> Submission:
    """The whole study is validated and its cost bounded before it is stored (issue 25: devices, device groups and
    power levels against the plan limits, classes, cap combinations and the simulation's work against the
    queueing ones; errors under `study.`, the simulation's at `method`); the limits travel with the task."""
    bounds = study_limits(settings)
    try:
        check_study(
            body.study, limits=limits_of(settings), method=body.method, study_limits=bounds,
            max_simulation_work=bounds.simulation_work,
        )
    except InvalidStudy as exc:
        raise InvalidStudy(
            [
                FieldError("method", e.message) if e.path == "jobs_per_replication" else e
                for e in under("study", exc.errors, keep=("jobs_per_replication",))
            ]
        ) from None
    params = body.params()
    params["bounds"] = {
        "classes": bounds.classes,
        "combinations": bounds.combinations,
        "simulation_work": bounds.simulation_work,
        "max_states": settings["QUEUEING_MAX_STATES"],
        "exact_s": settings["QUEUEING_EXACT_S"],
        "exact_study_s": settings["QUEUEING_EXACT_STUDY_S"],
    }
    return Submission(body.study, params)


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
