"""/v1/queueing-studies: power against response time under arrivals (always asynchronous), its front, cancel or
delete."""

from __future__ import annotations

from api.resources import (
    QUEUEING_STUDIES,
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
from api.schemas import AsyncSubmitHeaders, QueueingStudyPath, QueueingStudyRequest
from optsched.charts import queueing_front_png
from optsched.queueing import StudyResult, load_study
from optsched.schema.errors import FieldError, InvalidStudy

bp = v1_blueprint("queueing", __name__, "queueing studies", "Power against response time per priority (optsched queueing).")


@bp.post(
    "/queueing-studies",
    operation_id="createQueueingStudy",
    summary="Submit a queueing study",
    description="Validates and stores the study, queues its analysis and answers 202 at once; poll `Location` "
    "until `status` is final (`done`: stable and meeting its targets; `infeasible`: not, `result.reason` says "
    "why). With `Idempotency-Key`, a retried request returns the first study (`Idempotent-Replayed: true`).",
    responses=submit_responses(QUEUEING_STUDIES, "The study fails validation"),
)
def create_queueing_study(header: AsyncSubmitHeaders, body: QueueingStudyRequest):
    """Validate the whole study, store, queue: 202."""
    try:
        load_study(body.study)
    except InvalidStudy as exc:
        raise InvalidStudy([FieldError(f"study.{e.path}" if e.path else "study", e.message) for e in exc.errors])
    record, created = submit(QUEUEING_STUDIES, body.study, body.params(), header.idempotency_key)
    return accepted(QUEUEING_STUDIES, record, created)


@bp.get(
    "/queueing-studies/<study_id>",
    operation_id="getQueueingStudy",
    summary="Get a queueing study",
    description="The study resource: status, timestamps and, once done, per-class waits and responses, mean "
    "power, the caps and the Pareto front.",
    responses=get_responses(QUEUEING_STUDIES),
)
def get_queueing_study(path: QueueingStudyPath):
    """The queueing study resource."""
    return resource_response(QUEUEING_STUDIES, record_or_404(QUEUEING_STUDIES, path.study_id), 200)


@bp.get(
    "/queueing-studies/<study_id>/plot.png",
    operation_id="getQueueingStudyPlot",
    summary="The study's power-response front",
    description="Mean power against the high-priority class's mean response along the Pareto front, chosen caps "
    "starred (the CLI's --png). 404 if the study is unknown; 409 while it is queued or solving, or when it "
    "ended without a result or has no front.",
    responses={200: png_doc("The front plot."), **chart_responses(QUEUEING_STUDIES)},
)
def get_queueing_study_plot(path: QueueingStudyPath):
    """plot.png of an analysed study."""
    return chart_response(QUEUEING_STUDIES, path.study_id, "plot.png", queueing_front_png, missing=no_front)


@bp.delete(
    "/queueing-studies/<study_id>",
    operation_id="deleteQueueingStudy",
    summary="Cancel or delete a queueing study",
    description="A queued or running study is cancelled: 200 with the resource, status `cancelled`. A finished "
    "one is deleted: 204.",
    responses=delete_responses(QUEUEING_STUDIES),
)
def delete_queueing_study(path: QueueingStudyPath):
    """Cancel an unfinished study, delete a finished one."""
    return cancel_or_delete(QUEUEING_STUDIES, path.study_id)


def no_front(result: StudyResult) -> str | None:
    """Why a study has nothing to plot (None: it has a front)."""
    return None if result.front else (result.reason or "the study evaluated no caps")
