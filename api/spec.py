"""The served OpenAPI document, finished for the server that serves it (called once, by create_app's app):

- `security` as configured: bearer auth on every /v1 operation unless the server runs with OPTSCHED_AUTH=off
  (then none, and no 401, since none can be answered);
- the responses the HTTP server itself gives to any request (400 malformed, 408 too slow, 431 headers too large,
  413 body too large on operations with a body), as problem documents;
- links from each POST that creates a resource to the operations on its id (GET, DELETE, charts), so a stateful
  tester or a client generator can follow a created resource;
- an example for every request body and parameter (api/examples.py);
- this server's limits in the request schemas (api/costs.py);
- the night plan's `start` as what it is: a local date and time with an optional offset (not RFC 3339
  `date-time`, which needs the offset), the same pattern the request accepts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from api.costs import publish_limits
from api.errors import problem_doc
from api.examples import add_examples
from api.guards import security_requirement
from optsched.service.kinds.night_plan import NIGHT_START_SCHEMA
from optsched.service.tenants import tenants_of

# Answered by the HTTP server before (or instead of) the application, on any operation.
SERVER_RESPONSES = {
    "400": "The request is malformed (request line, headers, chunked encoding).",
    "408": "The request (headers and body) did not arrive within OPTSCHED_READ_TIMEOUT_S.",
    "431": "The request line or headers are larger than the server reads.",
}
BODY_TOO_LARGE = "The body is larger than OPTSCHED_MAX_BODY_MB."


def finish_spec(spec: dict[str, Any], config: Mapping[str, Any]) -> None:
    """Finish `spec` (in place) for a server with `config` (see the module docstring)."""
    authenticated = tenants_of(config).enabled
    operations = [(path, method, op) for path, item in spec["paths"].items() for method, op in item.items()]
    for path, _method, op in operations:
        responses = op.setdefault("responses", {})
        if path.startswith("/v1/"):
            requirement = security_requirement(authenticated)
            if requirement:
                op["security"] = requirement
            else:
                op.pop("security", None)
                responses.pop("401", None)
        for status, description in SERVER_RESPONSES.items():
            responses.setdefault(status, problem_doc(description))
        if "requestBody" in op:
            responses.setdefault("413", problem_doc(BODY_TOO_LARGE))
    if not authenticated:
        spec.get("components", {}).pop("securitySchemes", None)
    _add_links(spec)
    add_examples(spec)
    publish_limits(spec, config)
    night_plan = spec.get("components", {}).get("schemas", {}).get("NightPlan", {}).get("properties", {})
    if "start" in night_plan:
        night_plan["start"] = {k: v for k, v in NIGHT_START_SCHEMA.items() if k != "examples"}


def _add_links(spec: dict[str, Any]) -> None:
    """From each POST that creates a resource (201/202 with a resource schema) to every operation on that
    resource's URL, `<collection>/{<id>}[/...]`, where the collection is the path of the GET that returns the same
    schema; the id is taken from the created resource's `id`."""
    paths = spec["paths"]
    collections: dict[str, tuple[str, str]] = {}  # resource schema -> (collection path, id parameter)
    for path, item in paths.items():
        match = re.fullmatch(r"(/v1/.+)/\{(\w+)\}", path)
        schema = _schema_of(item.get("get", {}), "200")
        if match and schema:
            collections[schema] = (match.group(1), match.group(2))
    for item in paths.values():
        create = item.get("post")
        if create is None:
            continue
        for status in ("201", "202"):
            found = collections.get(_schema_of(create, status) or "")
            if found is None:
                continue
            collection, parameter = found
            links: dict[str, Any] = {}
            for other, other_item in paths.items():
                if re.fullmatch(re.escape(f"{collection}/{{{parameter}}}") + r"(/.*)?", other) is None:
                    continue
                for op in other_item.values():
                    target = op.get("operationId")
                    if target:
                        links[target] = {
                            "operationId": target,
                            "parameters": {parameter: "$response.body#/id"},
                            "description": f"The created resource's id as `{parameter}`.",
                        }
            if links:
                create["responses"][status]["links"] = links


def _schema_of(operation: dict[str, Any], status: str) -> str | None:
    """The name of the JSON schema `operation` answers `status` with, if it is a reference."""
    content = operation.get("responses", {}).get(status, {}).get("content", {}).get("application/json", {})
    ref = content.get("schema", {}).get("$ref", "")
    return ref.rsplit("/", 1)[-1] or None
