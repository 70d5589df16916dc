"""RFC 9457 problem details: the one place where errors become `application/problem+json` responses."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from flask import Flask, Response, current_app, request
from pydantic import BaseModel, Field, ValidationError
from werkzeug.exceptions import HTTPException
from werkzeug.http import HTTP_STATUS_CODES

from optsched.infra.queue import QueueFull
from optsched.infra.rq.keys import QUEUE_OUTAGES
from optsched.infra.store import DATABASE_OUTAGES, InvalidCursor
from optsched.schema.errors import FieldError, InvalidPlan, InvalidWorkload
from optsched.schema.workload import field_errors
from optsched.service.kinds.base import Conflict
from optsched.service.resources import IdempotencyConflict, NotFound
from optsched.service.tenants import QuotaExceeded, TeamQueueFull

PROBLEM_JSON = "application/problem+json"
# Problem types: about:blank where the status says it all, a URN where the client can act on the kind.
INVALID_WORKLOAD = "urn:optsched:problem:invalid-workload"
INVALID_REQUEST = "urn:optsched:problem:invalid-request"
QUEUE_FULL = "urn:optsched:problem:queue-full"
TEAM_QUEUE_FULL = "urn:optsched:problem:team-queue-full"
QUOTA_EXCEEDED = "urn:optsched:problem:quota-exceeded"
TOO_MANY_GUESSES = "urn:optsched:problem:too-many-wrong-tokens"
DEPENDENCY_UNAVAILABLE = "urn:optsched:problem:dependency-unavailable"
# Retry-After of a dependency outage (the database or Redis does not answer): outages seen last seconds to a minute.
OUTAGE_RETRY_AFTER_S = 5
IDEMPOTENCY_KEY_REUSED = "urn:optsched:problem:idempotency-key-reused"


# Request bodies that carry a workload: their validation errors are `invalid-workload` problems.
DOCUMENT_MODELS = {
    "Workload": "workload",
    "VerifyRequest": "workload or plan",
    "NightPlanRequest": "queue or night arguments",
    "FrontierRequest": "workload or budgets",
}


class ProblemField(BaseModel):
    path: str = Field(description="JSON path of the offending field ('' for the whole document).")
    message: str


class Problem(BaseModel):
    """An RFC 9457 problem document."""

    type: str = Field(default="about:blank", description="URI of the problem type.")
    title: str
    status: int
    detail: str = ""
    errors: list[ProblemField] = Field(default_factory=list, description="Every invalid field, with its JSON path.")


class ApiProblem(Exception):
    """Raise from a view to answer with a problem document."""

    def __init__(
        self,
        status: int,
        detail: str,
        *,
        type: str = "about:blank",
        title: str | None = None,
        errors: Iterable[FieldError] = (),
        headers: dict[str, str] | None = None,
    ):
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.type = type
        self.title = title or HTTP_STATUS_CODES.get(status, "Error")
        self.errors = list(errors)
        self.headers = headers or {}


def problem_response(problem: ApiProblem) -> Response:
    body = Problem(
        type=problem.type,
        title=problem.title,
        status=problem.status,
        detail=problem.detail,
        errors=[ProblemField(path=e.path, message=e.message) for e in problem.errors],
    )
    response = current_app.response_class(
        json.dumps(body.model_dump(mode="json")), status=problem.status, mimetype=PROBLEM_JSON
    )
    response.headers.update(problem.headers)
    return response


def problem_doc(description: str, headers: dict[str, Any] | None = None) -> dict[str, Any]:
    """An OpenAPI response object for a problem document (a fresh dict: the generator mutates it)."""
    doc: dict[str, Any] = {
        "description": description,
        "content": {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}},
    }
    if headers:
        doc["headers"] = headers
    return doc


def validation_problem(exc: ValidationError) -> Response:
    """flask-openapi3's hook for request models that fail validation (body, query, headers, path)."""
    errors = field_errors(exc)
    if exc.title in DOCUMENT_MODELS:
        what, problem_type = DOCUMENT_MODELS[exc.title], INVALID_WORKLOAD
    else:
        what, problem_type = "request", INVALID_REQUEST
    return problem_response(
        ApiProblem(
            422,
            f"invalid {what} ({len(errors)} problem(s)); fix the fields listed in `errors`",
            type=problem_type,
            errors=errors,
        )
    )


def register_error_handlers(app: Flask) -> None:
    @app.errorhandler(ApiProblem)
    def _api_problem(exc: ApiProblem):
        return problem_response(exc)

    @app.errorhandler(InvalidWorkload)
    def _invalid_workload(exc: InvalidWorkload):
        return problem_response(
            ApiProblem(
                422, f"invalid workload ({len(exc.errors)} problem(s))", type=INVALID_WORKLOAD, errors=exc.errors
            )
        )

    @app.errorhandler(InvalidPlan)
    def _invalid_plan(exc: InvalidPlan):
        return problem_response(
            ApiProblem(422, f"invalid plan ({len(exc.errors)} problem(s))", type=INVALID_WORKLOAD, errors=exc.errors)
        )

    @app.errorhandler(InvalidCursor)
    def _invalid_cursor(exc: InvalidCursor):
        return problem_response(
            ApiProblem(422, str(exc), type=INVALID_REQUEST, errors=[FieldError("cursor", str(exc))])
        )

    @app.errorhandler(IdempotencyConflict)
    def _idempotency_conflict(exc: IdempotencyConflict):
        return problem_response(ApiProblem(422, str(exc), type=IDEMPOTENCY_KEY_REUSED))

    @app.errorhandler(NotFound)
    def _not_found(exc: NotFound):
        return problem_response(ApiProblem(404, str(exc)))

    @app.errorhandler(Conflict)
    def _conflict(exc: Conflict):
        return problem_response(ApiProblem(409, str(exc)))

    @app.errorhandler(QueueFull)
    def _queue_full(exc: QueueFull):
        return problem_response(
            ApiProblem(503, str(exc), type=QUEUE_FULL, headers={"Retry-After": str(exc.retry_after_s)})
        )

    @app.errorhandler(TeamQueueFull)
    def _team_queue_full(exc: TeamQueueFull):
        return problem_response(
            ApiProblem(429, str(exc), type=TEAM_QUEUE_FULL, headers={"Retry-After": str(exc.retry_after_s)})
        )

    @app.errorhandler(QuotaExceeded)
    def _quota_exceeded(exc: QuotaExceeded):
        return problem_response(
            ApiProblem(507, str(exc), type=QUOTA_EXCEEDED, headers={"Retry-After": str(exc.retry_after_s)})
        )

    def _outage(what: str) -> Any:
        def handler(exc: Exception):
            current_app.logger.warning("%s %s: %s does not answer (%s)", request.method, request.path, what,
                                       type(exc).__name__)
            return problem_response(ApiProblem(
                503,
                f"{what} does not answer; retry after Retry-After seconds (a POST with the same Idempotency-Key "
                "returns the plan if the first one was stored)",
                type=DEPENDENCY_UNAVAILABLE,
                headers={"Retry-After": str(OUTAGE_RETRY_AFTER_S)},
            ))

        return handler

    for outage in DATABASE_OUTAGES:  # an outage of a dependency is a 503 to retry; a 500 stays for bugs
        app.register_error_handler(outage, _outage("the database"))
    for outage in QUEUE_OUTAGES:
        app.register_error_handler(outage, _outage("the solve queue (Redis)"))

    @app.errorhandler(HTTPException)
    def _http_error(exc: HTTPException):
        if exc.code is None:
            return exc
        headers = {k: v for k, v in exc.get_headers() if k.lower() not in ("content-type", "content-length")}
        return problem_response(ApiProblem(exc.code, _describe(exc), headers=headers))

    @app.errorhandler(Exception)
    def _unexpected(exc: Exception):
        current_app.logger.exception("unhandled error on %s %s", request.method, request.path)
        return problem_response(ApiProblem(500, "the server failed to handle this request; the error was logged"))


def _describe(exc: HTTPException) -> str:
    if exc.code == 413:
        limit = current_app.config.get("MAX_CONTENT_LENGTH") or 0
        return f"the request body is larger than the {limit:,} bytes this service accepts (OPTSCHED_MAX_BODY_MB)"
    return exc.description or ""
