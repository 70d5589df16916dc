"""What the asynchronous /v1 resources share: submit to the queue with idempotency, look up by kind, answer with
the resource or one of its charts, cancel or delete. Views stay thin: they validate, call these, and return."""

from __future__ import annotations

import json
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from flask import Response, current_app, request
from flask_openapi3 import APIBlueprint, Tag

from api.costs import chart_size, check_chart
from api.drawing import ChartDrawer, ChartRefused, ChartUnavailable
from api.errors import ApiProblem, problem_doc
from api.guards import UNAUTHORIZED, V1_SECURITY, arrival, require_json_body
from api.schemas import resource_model
from api.services import admission, current_team, services
from optsched.infra.store import PlanRecord
from optsched.service import resources
from optsched.service.kinds import KindSpec
from optsched.service.kinds.base import Chart

PNG = "image/png"
OCTET_STREAM = "application/octet-stream"
CHART_DRAWER = "optsched.chart_drawer"


# An operation's answers as flask-openapi3 takes them: status -> model, response object, or None.
Responses = dict[str | int | HTTPStatus, Any]
RETRY_AFTER = {"Retry-After": {"description": "Seconds to wait before retrying.", "schema": {"type": "integer"}}}


def v1_blueprint(name: str, import_name: str, tag: str, description: str) -> APIBlueprint:
    """A /v1 blueprint: its OpenAPI tag, the bearer token (when the server has one) and JSON bodies required."""
    bp = APIBlueprint(
        name, import_name, url_prefix="/v1", abp_tags=[Tag(name=tag, description=description)],
        abp_security=V1_SECURITY,
    )
    bp.before_request(require_json_body)
    return bp


def submit_responses(
    spec: KindSpec, invalid: str, more: Responses | None = None
) -> Responses:
    """The answers of a POST that stores and queues a resource; `invalid` says what a 422 rejected; `more` adds
    or replaces answers by status code."""
    responses: Responses = {
        202: resource_doc(spec, "Accepted and queued; poll `Location` until `status` is final."),
        400: problem_doc("The body is not valid JSON."),
        401: problem_doc(UNAUTHORIZED),
        413: problem_doc("The body is larger than OPTSCHED_MAX_BODY_MB."),
        415: problem_doc("The body is not `application/json`."),
        422: problem_doc(f"{invalid}; `errors` lists every offending field."),
        429: problem_doc(
            "Your team has its whole share of the solve queue queued or solving (OPTSCHED_QUEUE_SIZE divided among "
            "the teams), or this address sent too many wrong tokens; retry after `Retry-After` seconds.",
            RETRY_AFTER,
        ),
        503: problem_doc("The solve queue is full; retry after `Retry-After` seconds.", RETRY_AFTER),
        507: problem_doc(
            "Your team's stored documents fill its quota (OPTSCHED_TEAM_QUOTA_MB): delete finished resources, or "
            "retry after `Retry-After` seconds, when the oldest expires (OPTSCHED_RESULT_TTL_S).",
            RETRY_AFTER,
        ),
    }
    responses.update(more or {})
    return dict(sorted(responses.items(), key=lambda item: int(item[0])))


def get_responses(spec: KindSpec) -> Responses:
    """The answers of a GET of one resource."""
    return {
        200: resource_model(spec), 401: problem_doc(UNAUTHORIZED), 404: problem_doc(f"No {spec.noun} with this id.")
    }


def delete_responses(spec: KindSpec) -> Responses:
    """The answers of a DELETE: 200 with the cancelled resource, 204 for a deleted one."""
    return {**get_responses(spec), 204: None}


def resource_doc(spec: KindSpec, description: str) -> dict[str, Any]:
    """OpenAPI response object for the resource, with its Location header."""
    return {
        "description": description,
        "headers": {"Location": {"description": f"URL of the {spec.noun}.", "schema": {"type": "string"}}},
        "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{resource_model(spec).__name__}"}}},
    }


def png_doc(what: str) -> dict[str, Any]:
    """A PNG response; also offered as application/octet-stream (Accept), which generated clients read as bytes."""
    binary = {"schema": {"type": "string", "format": "binary"}}
    return {"description": what, "content": {PNG: dict(binary), OCTET_STREAM: dict(binary)}}


def chart_responses(spec: KindSpec) -> Responses:
    return {
        304: {"description": "Not modified (If-None-Match matched the ETag)."},
        401: problem_doc(UNAUTHORIZED),
        404: problem_doc(f"No {spec.noun} with this id."),
        409: problem_doc(
            f"No chart in the {spec.noun}'s state: still queued or solving (poll its URL until its status is "
            "final), ended without a result (cancelled, failed, nothing to draw), or too large to draw here "
            "(OPTSCHED_MAX_CHART_ROWS/_BARS); `detail` says which."
        ),
    }


def submit(
    spec: KindSpec, document: dict[str, Any], params: dict[str, Any], idempotency_key: str | None
) -> tuple[PlanRecord, bool]:
    """Store and queue the resource for the request's team (optsched.service.resources.submit); with an
    Idempotency-Key the team used already, the first resource (second item False)."""
    done = resources.submit(services().store, services().queue, document, kind=spec, params=params,
                            idempotency_key=idempotency_key, team=current_team(), admission=admission())
    return done.record, done.created


def accepted(spec: KindSpec, record: PlanRecord, created: bool) -> Response:
    """202 with the resource and its Location (Idempotent-Replayed on a retry)."""
    response = resource_response(spec, record, 202)
    if not created:
        response.headers["Idempotent-Replayed"] = "true"
    return response


def record_or_404(spec: KindSpec, resource_id: str, *, documents: bool = True) -> PlanRecord:
    """The request's team's resource of this kind, else 404 (another team's resource is not there for it); without
    its documents when `documents` is False (PlanStore.get)."""
    record = services().store.get(resource_id, kind=spec.name, team=current_team(), documents=documents)
    if record is None:
        listed = f"; list {spec.noun}s with GET /v1/{spec.collection}" if spec.listed else ""
        raise ApiProblem(404, f"no {spec.noun} {resource_id!r}{listed}")
    return record


def resource_response(spec: KindSpec, record: PlanRecord, status: int) -> Response:
    body = resource_model(spec).of(record).model_dump(mode="json", by_alias=True)
    response = current_app.response_class(json.dumps(body), status=status, mimetype="application/json")
    response.headers["Location"] = spec.location(record.id)
    return response


def cancel_or_delete(spec: KindSpec, resource_id: str) -> Response | tuple[str, int]:
    """Cancel an unfinished resource (200 with it), delete a finished one (204)."""
    cancelled = resources.cancel_or_delete(
        services().store, services().queue, spec, resource_id, requested_at=arrival(),
        replay_s=current_app.config["CANCEL_REPLAY_S"], team=current_team(),
    )
    return ("", 204) if cancelled is None else resource_response(spec, cancelled, 200)


def chart_response(spec: KindSpec, resource_id: str, chart: Chart, name: str | None = None) -> Response:
    """The chart `chart.draw(result)` of a finished resource as PNG (`name`: how messages call it, by default its
    file): 404 when it is unknown; 409 while it is queued or solving, when it ended without a result, when
    `chart.missing(result)` says why there is nothing to draw, or when the chart is larger than this server draws
    (api/costs.py); an ETag lets a client revalidate without a redraw.

    The cheap answers come first, from the record's id, state and finished_at, read without its documents: 304,
    the drawer's cached chart or kept 409, or 503 when the drawer has no room; the documents are read, the result
    validated (`resource_model(spec).of`) and sized only for a drawing that starts. In a storm of 34 GETs of a
    fresh 400-job chart, each request validating the result before being refused took the HTTP process's time from
    /healthz, and in storms of GETs of charts already drawn or refused, each request still read and parsed the
    plan's megabyte of JSON (p99 1.2 s at load 12)."""
    name = chart.file if name is None else name
    draw = chart.draw
    record = record_or_404(spec, resource_id, documents=False)
    if not record.status.final:
        raise ApiProblem(
            409,
            f"the {spec.noun} is {record.outcome}; its {name} exists once it is done (poll {spec.location(record.id)})",
        )
    # A finished result never changes, so its ETag stands for the same chart.
    etag = f"{record.id}-{name}-{record.finished_at.timestamp() if record.finished_at else 0:.6f}"

    def document() -> Any:
        """The validated result, when it has a chart this server draws; else a 409, kept for this key (a
        finished result never changes, nor does this server's size table until it restarts)."""
        whole = record_or_404(spec, resource_id)
        result = getattr(resource_model(spec).of(whole), spec.result_field)
        why = ended_without_result(whole) if result is None else chart.missing(result)
        try:
            if why is not None:
                raise ApiProblem(409, f"the {spec.noun} has no {name}: {why}")  # it exists; its state has no chart
            check_chart(name, chart_size(draw, result))
        except ApiProblem as problem:
            raise ChartRefused(problem) from None
        return result

    if request.if_none_match.contains(etag):
        response = current_app.response_class(status=304)
    else:
        # The same bytes as application/octet-stream to a client that asks for that (generated clients do).
        mimetype = request.accept_mimetypes.best_match([PNG, OCTET_STREAM], default=PNG)
        response = current_app.response_class(render(etag, draw, document), mimetype=mimetype)
    response.set_etag(etag)
    response.headers["Cache-Control"] = "private, no-cache"
    return response


def ended_without_result(record: PlanRecord) -> str:
    return f"it ended {record.outcome}" + (f" ({record.error})" if record.error else "")


def render(key: str, draw: Callable[[Any], bytes], document: Callable[[], Any]) -> bytes:
    """The chart drawn apart from the HTTP process (api/drawing.py), or 503 with Retry-After when it cannot be now,
    or the 409 `document()` raised for this key (ChartRefused); `document()` is called only when the drawing
    starts (ChartDrawer.png_of)."""
    drawer = current_app.extensions.get(CHART_DRAWER)
    if drawer is None:
        drawer = current_app.extensions.setdefault(
            CHART_DRAWER, ChartDrawer(current_app.config["CHART_WORKERS"], current_app.config["CHART_TIMEOUT_S"])
        )
    try:
        return drawer.png_of(key, draw, document)
    except ChartUnavailable as exc:
        raise ApiProblem(503, str(exc), headers={"Retry-After": str(exc.retry_after_s)}) from None
    except ChartRefused as exc:
        raise exc.answer from None
