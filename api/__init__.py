"""The optsched REST service: `create_app(config=None)` builds the Flask app (flask-openapi3 generates the spec).

One blueprint per resource kind, derived from the kinds' registry (api/kinds.py over optsched.service.kinds), one
each for verify and health, and one for the HTML viewer (api/viewer.py, templates in api/templates); errors become
problem+json in api/errors.py; the store and the solve queue live in the optsched library (optsched.infra,
optsched.service) so other front ends reuse them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import Flask, redirect
from flask_openapi3 import Info, OpenAPI

from api import health, metrics, verify, viewer
from api.errors import Problem, register_error_handlers, validation_problem
from api.guards import BEARER_SCHEME, ApiRequest, StrictJSONProvider, note_arrival, require_v1_token
from api.headers import DOCS_INDEX_HTML, SWAGGER_HTML, add_security_headers
from api.kinds import blueprints
from api.resources import CHART_DRAWER
from api.services import EXTENSION, Services, services
from api.spec import finish_spec
from api.throttle import Throttle
from optsched.infra.retention import RetentionSweeper
from optsched.infra.store import PlanStore
from optsched.service.queues import open_queue
from optsched.service.settings import load_settings
from optsched.service.tenants import log_authentication, tenants_of

__all__ = ["create_app", "shutdown", "services"]

API_VERSION = "1.0.0"


class _OpenAPI(OpenAPI):
    json_provider_class = StrictJSONProvider
    request_class = ApiRequest

    def generate_spec_json(self) -> None:
        super().generate_spec_json()
        # flask-openapi3 adds a plain-JSON 422 to operations that declare none; ours declare theirs, and
        # operations without a request model cannot answer 422 at all.
        for operation in (op for item in self.spec_json["paths"].values() for op in item.values()):
            declared = operation.get("responses", {}).get(self.validation_error_status, {})
            if "application/json" in declared.get("content", {}):
                del operation["responses"][self.validation_error_status]
        finish_spec(self.spec_json, self.config)


def create_app(config: Mapping[str, Any] | None = None) -> Flask:
    """The service; settings come from OPTSCHED_* variables, overridden by `config` (optsched/service/settings.py).
    Without a team's token (or with a short one) it refuses to start (ConfigError) unless AUTH is `off`."""
    settings = load_settings(config)
    log_authentication(tenants_of(settings))
    app = _OpenAPI(
        __name__,
        info=Info(
            title="optsched",
            version=API_VERSION,
            description="Power- and deadline-aware placement of jobs on heterogeneous accelerators.",
        ),
        security_schemes=BEARER_SCHEME,
        validation_error_model=Problem,
        validation_error_callback=validation_problem,
        doc_prefix="/docs",
        doc_url="/openapi.json",
    )
    app.config.update(settings)
    app.config["MAX_CONTENT_LENGTH"] = int(settings["MAX_BODY_MB"] * 2**20)
    # The documentation pages without inline code, so that their CSP allows none (api/headers.py).
    app.config.update(SWAGGER_HTML_STRING=SWAGGER_HTML, OPENAPI_HTML_STRING=DOCS_INDEX_HTML)

    store = PlanStore(settings["DATABASE_URL"])
    queue = open_queue(store, settings)
    retention = RetentionSweeper(store, settings["RESULT_TTL_S"] or None, settings["RETENTION_SWEEP_S"])
    throttle = Throttle(settings["AUTH_FAILURES_PER_S"], settings["AUTH_FAILURE_BURST"])
    app.extensions[EXTENSION] = Services(store=store, queue=queue, retention=retention, throttle=throttle)

    metrics.install(app, store, queue)  # first: the requests the hooks below answer are counted and timed too
    app.before_request(note_arrival)
    app.before_request(require_v1_token)  # before routing's 404/405: an unknown /v1 URL is a 401 too
    app.after_request(add_security_headers)
    app.json.sort_keys = False  # type: ignore[attr-defined]  # Flask types app.json as the JSONProvider base

    for blueprint in (*blueprints(), verify.bp, health.bp):
        app.register_api(blueprint)
    app.register_blueprint(viewer.bp)
    app.add_url_rule("/openapi.json", "openapi_json", lambda: app.api_doc)
    app.add_url_rule("/docs", "docs", lambda: redirect("/docs/swagger"))
    register_error_handlers(app)

    if settings["START_WORKERS"]:
        queue.start()
        retention.start()
    return app


def shutdown(app: Flask) -> None:
    """Stop the retention sweeper, the solve queue (plans in flight go back to queued), the chart drawing processes,
    and close the store."""
    drawer = app.extensions.get(CHART_DRAWER)
    if drawer is not None:
        drawer.stop()
    s = services(app)
    s.retention.stop()
    s.queue.stop()
    s.store.close()
