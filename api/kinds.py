"""The /v1 routes of every resource kind, derived from its `KindSpec` (optsched.service.kinds) by one blueprint
factory: POST /v1/<collection> (or /v1/<parent>/<id>/<collection>) to submit, GET and DELETE /v1/<collection>/<id>,
GET /v1/<collection>/<id>/<chart> per chart, and GET /v1/<collection> for a listed kind. The views stay thin: the
kind's `prepare` checks the request, optsched.service.resources stores and queues it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from flask import Response, current_app, request
from flask_openapi3 import APIBlueprint

from api.errors import problem_doc
from api.guards import UNAUTHORIZED
from api.resources import (
    Responses,
    accepted,
    cancel_or_delete,
    chart_response,
    chart_responses,
    delete_responses,
    get_responses,
    png_doc,
    record_or_404,
    resource_doc,
    resource_response,
    submit,
    submit_responses,
    v1_blueprint,
)
from api.schemas import (
    AsyncSubmitHeaders,
    SubmitHeaders,
    list_models,
    parent_path_model,
    path_model,
    summary_model,
)
from api.services import current_team, services
from optsched.infra.store import PlanRecord
from optsched.service.kinds import KINDS, KindSpec
from optsched.service.kinds.base import Chart
from optsched.service.resources import list_resources

View = Callable[..., Any]


def kind_blueprint(spec: KindSpec) -> APIBlueprint:
    """The blueprint of one kind: its routes, operation ids (create<Camel>, get<Camel>, ...) and response documents."""
    texts = spec.texts
    bp = v1_blueprint(spec.collection.replace("-", "_"), __name__, texts.tag, texts.tag_description)
    item = f"/{spec.collection}/<{spec.id_param}>"
    path = path_model(spec)
    _add_submit(bp, spec)

    def get_one(path: Any) -> Response:
        return resource_response(spec, record_or_404(spec, getattr(path, spec.id_param)), 200)

    bp.get(item, operation_id=f"get{spec.camel}", summary=f"Get a {spec.noun}", description=texts.get_description,
           responses=get_responses(spec))(_view(get_one, f"get_{spec.name}", path=path))

    if spec.listed:
        _add_list(bp, spec)
    for chart in spec.charts:
        _add_chart(bp, spec, chart, path)

    def delete_one(path: Any) -> Response | tuple[str, int]:
        return cancel_or_delete(spec, getattr(path, spec.id_param))

    bp.delete(item, operation_id=f"delete{spec.camel}", summary=f"Cancel or delete a {spec.noun}",
              description=texts.delete_description, responses=delete_responses(spec))(
        _view(delete_one, f"delete_{spec.name}", path=path))
    return bp


def _add_submit(bp: APIBlueprint, spec: KindSpec) -> None:
    """POST: the kind's `prepare` checks the request, then store and queue; a `sync` kind waits a little (201)."""
    texts = spec.texts
    more: Responses = {status: problem_doc(text) for status, text in texts.submit_problems.items()}
    if spec.sync:
        more[201] = resource_doc(spec, f"The solve finished within OPTSCHED_SYNC_WAIT_S: the finished {spec.noun}.")
        more[202] = resource_doc(spec, "Accepted and queued or solving; poll `Location` until `status` is final.")
    parent = KINDS[spec.parent] if spec.parent else None
    rule = f"/{parent.collection}/<{parent.id_param}>/{spec.collection}" if parent else f"/{spec.collection}"
    models: dict[str, Any] = {"header": SubmitHeaders if spec.sync else AsyncSubmitHeaders, "body": spec.request}
    if parent is not None:
        models["path"] = parent_path_model(spec)

    def create(header: Any, body: Any, path: Any = None) -> Response:
        parent_record = record_or_404(parent, getattr(path, parent.id_param)) if parent is not None else None
        submission = spec.prepare(body, request.get_json(), current_app.config, parent_record)
        record, created = submit(spec, submission.document, submission.params, header.idempotency_key)
        if not spec.sync:
            return accepted(spec, record, created)
        respond_async = _prefers_async(header.prefer)
        if not respond_async and not record.status.final:
            record = _wait_for_solve(record)
        response = resource_response(spec, record, 201 if record.status.final else 202)
        if respond_async:
            response.headers["Preference-Applied"] = "respond-async"
        if not created:
            response.headers["Idempotent-Replayed"] = "true"
        return response

    if spec.precount is not None:
        precount, endpoint = spec.precount, f"{bp.name}.create_{spec.name}"

        def count_before_parsing() -> None:
            # A blueprint's before_request runs before flask-openapi3 parses the body into the request model.
            if request.endpoint == endpoint:
                precount(request.get_json(), current_app.config)

        bp.before_request(count_before_parsing)
    bp.post(rule, operation_id=f"create{spec.camel}", summary=texts.submit_summary,
            description=texts.submit_description, responses=submit_responses(spec, texts.invalid, more))(
        _view(create, f"create_{spec.name}", **models))


def _add_list(bp: APIBlueprint, spec: KindSpec) -> None:
    query_model, page_model = list_models(spec)
    summary = summary_model(spec)

    def list_page(query: Any) -> dict[str, Any]:
        status = query.status.value if query.status is not None else None
        records, next_cursor = list_resources(
            services().store, spec, limit=query.limit, cursor=query.cursor, status=status, team=current_team()
        )
        page = page_model(items=[summary.of(r) for r in records], next_cursor=next_cursor)
        return page.model_dump(mode="json")

    bp.get(f"/{spec.collection}", operation_id=f"list{spec.camel}s", summary=f"List {spec.noun}s, newest first",
           description=f"{spec.noun.capitalize()} summaries (without the {spec.noun}), newest first; pass "
           "`next_cursor` as `cursor` for the next page, `status` to filter.",
           responses={
               200: page_model,
               401: problem_doc(UNAUTHORIZED),
               422: problem_doc("A query parameter is invalid (for example a cursor this service did not return)."),
           })(_view(list_page, f"list_{spec.name}", query=query_model))


def _add_chart(bp: APIBlueprint, spec: KindSpec, chart: Chart, path: type[Any]) -> None:
    def get_chart(path: Any) -> Response:
        return chart_response(spec, getattr(path, spec.id_param), chart)

    name = chart.file.removesuffix(".png")
    bp.get(f"/{spec.collection}/<{spec.id_param}>/{chart.file}", operation_id=f"get{spec.camel}{chart.operation}",
           summary=chart.summary, description=chart.description,
           responses={**chart_responses(spec), 200: png_doc(chart.what)})(
        _view(get_chart, f"get_{spec.name}_{name}", path=path))


def _view(func: View, name: str, **models: Any) -> View:
    """`func` named `name` (its endpoint) with its parameters typed by `models`: flask-openapi3 reads the request
    models (path, query, header, body) from the view's annotations."""
    func.__name__ = func.__qualname__ = name
    func.__annotations__ = {**models, "return": Any}
    return func


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


def _prefers_async(prefer: str | None) -> bool:
    """RFC 7240: `Prefer` holds comma-separated preferences, each `token[=value][; params]`."""
    if not prefer:
        return False
    return any(p.split(";")[0].split("=")[0].strip().lower() == "respond-async" for p in prefer.split(","))


def blueprints() -> list[APIBlueprint]:
    """One blueprint per registered kind."""
    return [kind_blueprint(spec) for spec in KINDS.values()]
