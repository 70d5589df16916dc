"""The plan viewer: server-rendered HTML pages (Flask templates) over the same store as /v1.

`GET /` lists recent plans, night plans and frontiers; `/plans/{id}`, `/night-plans/{id}` and `/frontiers/{id}`
show one, with charts drawn by optsched.charts / optsched.frontier and served beside the page as PNG. Unless
the server runs with OPTSCHED_AUTH=off, every page and chart needs a team's token: `Authorization: Bearer <token>`,
or, in a browser, the login form (POST /login, never a token in the URL), which answers with a redirect back and a
session cookie (HttpOnly, SameSite=Lax, expiring after OPTSCHED_VIEWER_SESSION_S) naming the team, with an HMAC
keyed by the team's token, not the token itself: a new token ends the team's sessions. A team sees its own
resources only (optsched.service.tenants); wrong tokens and cookies are throttled per address (api/throttle.py).

Charts are interactive where scripts run: each page embeds its chart data as JSON (api/pages.py) and one script
of ours (api/static/viewer.js) draws it with Chart.js, vendored in api/static/vendor and served from here under
`/assets/<digest>/` (public, cached for a year: the digest changes with the file). The CSP lets only these scripts
run; without them the PNG and the tables still say everything.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from flask import Blueprint, Response, abort, current_app, g, redirect, render_template, request, send_file, url_for
from werkzeug.security import safe_join

from api.errors import ApiProblem
from api.guards import bearer_team, guess_failed, refuse_while_throttled
from api.pages import frontier_chart, night_view, plan_chart
from api.resources import chart_response
from api.schemas import resource_model
from api.services import current_team, services, tenants
from optsched.charts import placement_png
from optsched.infra.store import InvalidCursor, PlanRecord
from optsched.service.kinds import KINDS, KindSpec
from optsched.service.kinds.base import Chart

bp = Blueprint("viewer", __name__, template_folder="templates")

PAGE_SIZE = 30
REFRESH_S = 2  # unfinished resources reload themselves (meta refresh: no JavaScript)
COOKIE = "optsched_viewer"
# Pages are never cached (they show a resource's state); their security headers, the CSP among them, are the
# app's (api/headers.py PAGE_POLICY: only this server's script files run, no inline script, no eval).
PAGE_HEADERS = {"Cache-Control": "no-store"}
# Scripts and the stylesheet, served under /assets/<digest>/ (public: no secrets in them).
ASSETS = Path(__file__).resolve().parent / "static"
ASSET_MAX_AGE_S = 365 * 24 * 3600
PUBLIC_ENDPOINTS = frozenset({"viewer.asset"})
PLANS, NIGHT_PLANS, FRONTIERS, QUEUEING_STUDIES, REPLANS = (
    KINDS[name] for name in ("plan", "night", "frontier", "queueing", "replan")
)
# The plan page's chart (the API offers none for plans: the plan's JSON has every figure).
PLACEMENT = Chart(file="placement.png", draw=placement_png, operation="", summary="", description="", what="")


def _throttled_page() -> Response | None:
    """The 429 page while this client address may try no credential (api/throttle.py), else None."""
    try:
        refuse_while_throttled()
    except ApiProblem as exc:
        return _page(429, "error.html", message=exc.detail, headers=exc.headers)
    return None


@bp.before_request
def require_page_token() -> Response | None:
    """Unless OPTSCHED_AUTH=off: a team's bearer token or a live session cookie sets the request's team; else the
    login page (401), whose form POSTs the token to /login. A token in the URL is never taken (URLs end up in logs
    and histories). An address that sent too many wrong tokens or cookies gets 429 (api/throttle.py)."""
    if not tenants().enabled or request.endpoint in PUBLIC_ENDPOINTS or request.endpoint == "viewer.login":
        return None
    if (throttled := _throttled_page()) is not None:
        return throttled
    cookie = request.cookies.get(COOKIE)
    team = bearer_team() or (_cookie_team(cookie) if cookie else None)
    if team is not None:
        g.team = team
        return None
    if "Authorization" in request.headers or cookie:
        guess_failed()
    return _login_page(wrong=False, next_url=_here())


@bp.post("/login")
def login():
    """The login form's target: a team's token sets the session cookie and goes back to `next` (303)."""
    next_url = _safe_next(request.form.get("next", "/"))
    if not tenants().enabled:
        return redirect(next_url, 303)
    if (throttled := _throttled_page()) is not None:
        return throttled
    team = tenants().team_of(request.form.get("token", ""))
    token = tenants().token_of(team) if team is not None else None
    if team is None or token is None:
        guess_failed()
        return _login_page(wrong=True, next_url=next_url)
    response = redirect(next_url, 303)
    max_age = int(current_app.config["VIEWER_SESSION_S"])
    response.set_cookie(
        COOKIE, _cookie_value(team, token, int(time.time()) + max_age), max_age=max_age, httponly=True,
        samesite="Lax", secure=request.is_secure, path="/",
    )
    return response


def _login_page(*, wrong: bool, next_url: str) -> Response:
    return _page(401, "login.html", wrong=wrong, next_url=next_url, url_token="token" in request.args)


def _here() -> str:
    """This page's path and query, without a `token` parameter (the login form sends the user back here)."""
    args = [(k, v) for k, v in request.args.items(multi=True) if k != "token"]
    return _safe_next(request.path + (f"?{urlencode(args)}" if args else ""))


def _safe_next(target: str) -> str:
    """`target` if it is a path on this site (no scheme, no host, no backslash, no control character), else `/`."""
    if not target.startswith("/") or target.startswith("//") or "\\" in target or not target.isprintable():
        return "/"
    return target


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
    asked = request.args.get("kind", "")
    kind = asked if asked in KINDS else None
    try:
        records, next_cursor = services().store.list(
            limit=PAGE_SIZE, cursor=request.args.get("cursor") or None, kind=kind, team=current_team(), headline=True
        )
    except InvalidCursor as exc:
        return _page(400, "error.html", message=str(exc))
    return _page(200, "index.html", records=records, next_cursor=next_cursor, kind=kind, kinds=list(KINDS))


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
    chart = None if plan is None or not plan.devices else plan_chart(plan)
    return _page(200, _template(PLANS), record=record, plan=plan, domains=domains, chart=chart,
                 **_common(record, PLANS))


@bp.get("/plans/<plan_id>/placement.png")
def plan_placement_png(plan_id: str):
    return chart_response(PLANS, plan_id, PLACEMENT, "placement chart")


@bp.get("/night-plans/<night_plan_id>")
def night_page(night_plan_id: str):
    record, resource = _resource_or_404(NIGHT_PLANS, night_plan_id)
    if record is None:
        return resource
    night = resource.night_plan
    view = None if night is None else night_view(night)
    return _page(200, _template(NIGHT_PLANS), record=record, night=night, view=view, **_common(record, NIGHT_PLANS))


@bp.get("/frontiers/<frontier_id>")
def frontier_page(frontier_id: str):
    record, resource = _resource_or_404(FRONTIERS, frontier_id)
    if record is None:
        return resource
    frontier = resource.frontier
    chart = frontier_chart(frontier) if frontier is not None and frontier.points else None
    return _page(200, _template(FRONTIERS), record=record, frontier=frontier, chart=chart, **_common(record, FRONTIERS))


@bp.get("/queueing-studies/<study_id>")
def queueing_page(study_id: str):
    record, resource = _resource_or_404(QUEUEING_STUDIES, study_id)
    if record is None:
        return resource
    return _page(200, _template(QUEUEING_STUDIES), record=record, result=resource.result,
                 **_common(record, QUEUEING_STUDIES))


@bp.get("/replans/<replan_id>")
def replan_page(replan_id: str):
    record, resource = _resource_or_404(REPLANS, replan_id)
    if record is None:
        return resource
    return _page(200, _template(REPLANS), record=record, parent=resource.parent, replan=resource.replan,
                 **_common(record, REPLANS))


def _chart_view(spec: KindSpec, chart: Chart) -> None:
    """The page's copy of a kind's chart, `/<collection>/<id>/<file>` (endpoint `<kind>_<file stem>_png`)."""

    def view(**ids: str) -> Response:
        return chart_response(spec, ids[spec.id_param], chart)

    endpoint = f"{spec.name}_{chart.file.removesuffix('.png')}_png"
    bp.add_url_rule(f"/{spec.collection}/<{spec.id_param}>/{chart.file}", endpoint, view, methods=["GET"])


for _spec in KINDS.values():
    for _chart in _spec.charts:
        _chart_view(_spec, _chart)


@bp.get("/assets/<digest>/<path:filename>")
def asset(digest: str, filename: str):
    """A script or the stylesheet; cached for a year when `digest` is the file's current one (see asset_url)."""
    path = safe_join(str(ASSETS), filename)
    if path is None or not Path(path).is_file():
        abort(404)
    fresh = digest == _digest(filename)
    response = send_file(path, max_age=ASSET_MAX_AGE_S if fresh else 0)
    if fresh:
        response.headers["Cache-Control"] = f"public, max-age={ASSET_MAX_AGE_S}, immutable"
    return response


# -- helpers -----------------------------------------------------------------------------------------------------


def _resource_or_404(spec: KindSpec, resource_id: str) -> tuple[PlanRecord | None, Any]:
    """(record, resource model) of the request's team, or (None, a 404 page)."""
    record = services().store.get(resource_id, kind=spec.name, team=current_team())
    if record is None:
        return None, _page(404, "error.html", message=f"There is no {spec.noun} with id {resource_id!r}.")
    return record, resource_model(spec).of(record)


def _template(spec: KindSpec) -> str:
    """The template of a kind with a page (the viewer's own pages are for kinds that declare one)."""
    if spec.page is None:
        raise LookupError(f"the {spec.name} kind has no page")
    return spec.page


def _common(record: PlanRecord, spec: KindSpec) -> dict[str, Any]:
    return {
        "noun": spec.noun,
        "json_url": spec.location(record.id),
        "refresh": None if record.status.final else REFRESH_S,
    }


def _page(status: int, template: str, headers: dict[str, str] | None = None, **context: Any) -> Response:
    context.setdefault("refresh", None)
    response = current_app.response_class(render_template(template, **context), status=status, mimetype="text/html")
    response.headers.update(headers or {})
    return response


def _cookie_value(team: str, token: str, expires: int) -> str:
    """The session cookie, `<expiry>.<team>.<HMAC of both keyed by the team's token>`: it ends at its expiry (Unix
    time), a new token of the team invalidates it, and it is no bearer token for /v1."""
    message = f"optsched viewer session|{team}|{expires}".encode()
    mac = hmac.new(token.encode(), message, hashlib.sha256).hexdigest()
    return f"{expires}.{team}.{mac}"


def _cookie_team(cookie: str) -> str | None:
    """The team of a live, untampered session cookie, else None."""
    expires, _, rest = cookie.partition(".")
    team, _, _mac = rest.rpartition(".")
    if not expires.isdigit() or len(expires) > 12 or int(expires) <= time.time():
        return None
    token = tenants().token_of(team)
    if token is None:
        return None
    return team if hmac.compare_digest(cookie.encode(), _cookie_value(team, token, int(expires)).encode()) else None


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


@lru_cache(maxsize=64)
def _digest(filename: str) -> str:
    return hashlib.sha256((ASSETS / filename).read_bytes()).hexdigest()[:16]


@bp.app_template_global("asset_url")
def _asset_url(filename: str) -> str:
    return url_for("viewer.asset", digest=_digest(filename), filename=filename)


@bp.app_template_global("page_url")
def _page_url(record: PlanRecord) -> str:
    spec = KINDS.get(record.kind)
    endpoint = f"viewer.{record.kind}_page"
    if spec is None or endpoint not in current_app.view_functions:
        return spec.location(record.id) if spec is not None else url_for("viewer.index")
    values: dict[str, Any] = {spec.id_param: record.id}
    return url_for(endpoint, **values)
