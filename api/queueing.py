"""/v1/queueing-studies: power against response time under arrivals (always asynchronous), its front, cancel or
delete."""

from __future__ import annotations

from flask_openapi3 import APIBlueprint, Tag

from api.errors import problem_doc
from api.guards import UNAUTHORIZED, V1_SECURITY, require_json_body, require_token
from api.resources import (
    QUEUEING_STUDIES,
    accepted,
    cancel_or_delete,
    chart_response,
    chart_responses,
    png_doc,
    record_or_404,
    resource_doc,
    resource_response,
    submit,
)
from api.schemas import AsyncSubmitHeaders, QueueingStudyPath, QueueingStudyRequest, QueueingStudyResource
from optsched.charts import queueing_front_png
from optsched.queueing import StudyResult, load_study
from optsched.schema.errors import FieldError, InvalidStudy

bp = APIBlueprint(
    "queueing",
    __name__,
    url_prefix="/v1",
    abp_tags=[Tag(name="queueing studies", description="Power against response time per priority (optsched queueing).")],
    abp_security=V1_SECURITY,
)
bp.before_request(require_token)
bp.before_request(require_json_body)


@bp.post(
    "/queueing-studies",
    operation_id="createQueueingStudy",
    summary="Submit a queueing study",
    description="Validates and stores the study, queues its analysis and answers 202 at once; poll `Location` "
    "until `status` is final (`done`: stable and meeting its targets; `infeasible`: not, `result.reason` says "
    "why). With `Idempotency-Key`, a retried request returns the first study (`Idempotent-Replayed: true`).",
    responses={
        202: resource_doc(QUEUEING_STUDIES, "Accepted and queued; poll `Location` until `status` is final."),
        400: problem_doc("The body is not valid JSON."),
        401: problem_doc(UNAUTHORIZED),
        413: problem_doc("The body is larger than OPTSCHED_MAX_BODY_MB."),
        415: problem_doc("The body is not `application/json`."),
        422: problem_doc("The study fails validation; `errors` lists every offending field."),
        503: problem_doc("The solve queue is full; retry after `Retry-After` seconds."),
    },
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
    responses={
        200: QueueingStudyResource, 401: problem_doc(UNAUTHORIZED), 404: problem_doc("No queueing study with this id.")
    },
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
    responses={
        200: QueueingStudyResource,
        204: None,
        401: problem_doc(UNAUTHORIZED),
        404: problem_doc("No queueing study with this id."),
    },
)
def delete_queueing_study(path: QueueingStudyPath):
    """Cancel an unfinished study, delete a finished one."""
    return cancel_or_delete(QUEUEING_STUDIES, path.study_id)


def no_front(result: StudyResult) -> str | None:
    """Why a study has nothing to plot (None: it has a front)."""
    return None if result.front else (result.reason or "the study evaluated no caps")
