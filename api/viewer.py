"""The plan viewer: server-rendered HTML pages (Flask templates, no JavaScript) over the same store as /v1.

`GET /` lists recent plans, night plans and frontiers; `/plans/{id}`, `/night-plans/{id}` and `/frontiers/{id}`
show one, with charts drawn by optsched.charts / optsched.frontier and served beside the page as PNG. With
OPTSCHED_API_TOKEN set, every page and chart needs the token: `Authorization: Bearer <token>`, or once
`?token=<token>` in a browser, which answers with a redirect to the same page without it and a session cookie
(HttpOnly, SameSite=Lax) holding a value derived from the token, not the token itself.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime
from typing import Any

from flask import Blueprint, Response, current_app, redirect, render_template, request, url_for

from api.frontiers import no_curve
from api.guards import bearer_matches
from api.resources import FRONTIERS, NIGHT_PLANS, PLANS, Collection, chart_response
from api.services import services
from optsched.charts import gantt_png, placement_png, power_png
from optsched.explain.frontier import plot_frontier
from optsched.infra.store import InvalidCursor, PlanRecord, ResourceKind

bp = Blueprint("viewer", __name__, template_folder="templates")

PAGE_SIZE = 30
REFRESH_S = 2  # unfinished resources reload themselves (meta refresh: no JavaScript)
COOKIE = "optsched_viewer"
# Pages take nothing from elsewhere and run no script; charts and the stylesheet come from this server.
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; img-src 'self' data:; style-src 'self'; form-action 'self'; "
    "base-uri 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
# The page of each kind: its endpoint and the name of its id argument.
PAGES = {
    ResourceKind.plan: ("viewer.plan_page", "plan_id"),
    ResourceKind.night: ("viewer.night_page", "night_plan_id"),
    ResourceKind.frontier: ("viewer.frontier_page", "frontier_id"),
}


@bp.before_request
def require_page_token() -> Response | None:
    """With OPTSCHED_API_TOKEN set: a bearer token, the session cookie, or `?token=` (then a redirect without it)."""
    token = current_app.config.get("API_TOKEN")
    if not token:
        return None
    given = request.args.get("token")
    if given is not None:
        if not hmac.compare_digest(given.encode(), token.encode()):
            return _page(401, "login.html", wrong=True)
        # The same page without the token (url_for's own `_external` & co. are not taken from the query).
        args = {k: v for k, v in request.args.items() if k != "token" and not k.startswith("_")}
        response = redirect(url_for(request.endpoint, **{**args, **(request.view_args or {})}), 303)
        response.set_cookie(
            COOKIE, _cookie_value(token), httponly=True, samesite="Lax", secure=request.is_secure, path="/"
        )
        return response
    cookie = request.cookies.get(COOKIE, "")
    if bearer_matches(token) or hmac.compare_digest(cookie.encode(), _cookie_value(token).encode()):
        return None
    return _page(401, "login.html", wrong=False)


@bp.after_request
def page_headers(response: Response) -> Response:
    for name, value in PAGE_HEADERS.items():
        response.headers.setdefault(name, value)
    if response.status_code == 401:
        response.headers["WWW-Authenticate"] = 'Bearer realm="optsched"'
    return response


@bp.get("/")
def index():
    """Recent plans, night plans and frontiers, newest first (`?kind=` one kind, `?cursor=` the next page)."""
    kind = ResourceKind.__members__.get(request.args.get("kind", ""))
    try:
        records, next_cursor = services().store.list(
            limit=PAGE_SIZE, cursor=request.args.get("cursor") or None, kind=kind, headline=True
        )
    except InvalidCursor as exc:
        return _page(400, "error.html", message=str(exc))
    return _page(200, "index.html", records=records, next_cursor=next_cursor, kind=kind, kinds=list(ResourceKind))


@bp.get("/plans/<plan_id>")
def plan_page(plan_id: str):
    record, resource = _resource_or_404(PLANS, plan_id)
    if record is None:
        return resource
    plan = resource.plan
    domains = []
    if plan is not None:
        for name in sorted(set(plan.power_by_domain) | set(plan.budget_by_domain)):
            domains.append((name, plan.power_by_domain.get(name, 0.0), plan.budget_by_domain.get(name)))
    return _page(200, "plan.html", record=record, plan=plan, domains=domains, **_common(record, PLANS))


@bp.get("/plans/<plan_id>/placement.png")
def plan_placement_png(plan_id: str):
    return chart_response(PLANS, plan_id, "placement chart", placement_png)


@bp.get("/night-plans/<night_plan_id>")
def night_page(night_plan_id: str):
    record, resource = _resource_or_404(NIGHT_PLANS, night_plan_id)
    if record is None:
        return resource
    return _page(200, "night.html", record=record, night=resource.night_plan, **_common(record, NIGHT_PLANS))


@bp.get("/night-plans/<night_plan_id>/gantt.png")
def night_gantt_png(night_plan_id: str):
    return chart_response(NIGHT_PLANS, night_plan_id, "gantt.png", gantt_png)


@bp.get("/night-plans/<night_plan_id>/power.png")
def night_power_png(night_plan_id: str):
    return chart_response(NIGHT_PLANS, night_plan_id, "power.png", power_png)


@bp.get("/frontiers/<frontier_id>")
def frontier_page(frontier_id: str):
    record, resource = _resource_or_404(FRONTIERS, frontier_id)
    if record is None:
        return resource
    return _page(200, "frontier.html", record=record, frontier=resource.frontier, **_common(record, FRONTIERS))


@bp.get("/frontiers/<frontier_id>/plot.png")
def frontier_plot_png(frontier_id: str):
    return chart_response(FRONTIERS, frontier_id, "plot.png", plot_frontier, missing=no_curve)


# -- helpers -----------------------------------------------------------------------------------------------------


def _resource_or_404(collection: Collection, resource_id: str) -> tuple[PlanRecord | None, Any]:
    """(record, resource model), or (None, a 404 page)."""
    record = services().store.get(resource_id, kind=collection.kind)
    if record is None:
        return None, _page(404, "error.html", message=f"There is no {collection.noun} with id {resource_id!r}.")
    return record, collection.model.of(record)


def _common(record: PlanRecord, collection: Collection) -> dict[str, Any]:
    return {
        "noun": collection.noun,
        "json_url": collection.location(record.id),
        "refresh": None if record.status.final else REFRESH_S,
    }


def _page(status: int, template: str, **context: Any) -> Response:
    context.setdefault("refresh", None)
    return current_app.response_class(render_template(template, **context), status=status, mimetype="text/html")


def _cookie_value(token: str) -> str:
    """The session cookie: derived from the token, so the cookie alone is no bearer token for /v1."""
    return hmac.new(token.encode(), b"optsched viewer session", hashlib.sha256).hexdigest()


@bp.app_template_filter("watts")
def _watts(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f} W"


@bp.app_template_filter("kw")
def _kw(value: float | None) -> str:
    return "—" if value is None else f"{value / 1000:,.2f} kW"


@bp.app_template_filter("num")
def _num(value: float | None, digits: int = 4) -> str:
    return "—" if value is None else f"{value:.{digits}g}"


@bp.app_template_filter("hours")
def _hours(value: float | None) -> str:
    return "—" if value is None else f"{value:,.2f} h"


@bp.app_template_filter("when")
def _when(value: datetime | None) -> str:
    return "—" if value is None else value.strftime("%Y-%m-%d %H:%M:%S UTC")


@bp.app_template_global("took")
def _took(start: datetime | None, end: datetime | None) -> str:
    if start is None or end is None:
        return "—"
    seconds = (end - start).total_seconds()
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:,.1f} s"


@bp.app_template_global("page_url")
def _page_url(record: PlanRecord) -> str:
    endpoint, argument = PAGES[record.kind]
    return url_for(endpoint, **{argument: record.id})
