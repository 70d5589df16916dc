"""Checks run before every /v1 view: the bearer token, then (for bodies) JSON that parses."""

from __future__ import annotations

import hmac
import json
from typing import Any

from flask import Request, current_app, request
from flask.json.provider import DefaultJSONProvider

from api.errors import ApiProblem
from optsched.schema.limits import check_document

# Documented on every /v1 operation; the empty alternative says the token is optional unless configured.
V1_SECURITY: list[dict[str, list[str]]] = [{"bearerAuth": []}, {}]
UNAUTHORIZED = "Missing or wrong bearer token (only when OPTSCHED_API_TOKEN is set)."
BEARER_SCHEME = {"bearerAuth": {"type": "http", "scheme": "bearer", "description": "OPTSCHED_API_TOKEN, when set."}}


def require_token() -> None:
    """401 unless `Authorization: Bearer <OPTSCHED_API_TOKEN>` (compared in constant time), when a token is set."""
    token = current_app.config.get("API_TOKEN")
    if not token:
        return
    if not bearer_matches(token):
        raise ApiProblem(
            401,
            "this service needs `Authorization: Bearer <token>` with the token it was started with",
            headers={"WWW-Authenticate": 'Bearer realm="optsched"'},
        )


def bearer_matches(token: str) -> bool:
    """Whether the request carries `Authorization: Bearer <token>` (compared in constant time)."""
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


def require_json_body() -> None:
    """415 unless the body is declared JSON, 400 unless it parses (413 comes from reading it past the limit), 422
    when it is too deep or holds too many items to validate cheaply (optsched.limits.check_document)."""
    if request.method not in ("POST", "PUT", "PATCH"):
        return
    if not request.is_json:
        raise ApiProblem(
            415,
            f"send the body as application/json (got {request.mimetype or 'no Content-Type'})",
            headers={"Accept-Post": "application/json"},
        )
    check_document(request.get_json())  # parsed once and cached; a body that does not parse is a 400


class ApiRequest(Request):
    """Says why a body failed to parse (Flask's own 400 hides it outside debug mode)."""

    def on_json_loading_failed(self, e: ValueError | None) -> Any:
        if e is None:
            raise ApiProblem(415, f"send the body as application/json (got {self.mimetype or 'no Content-Type'})")
        raise ApiProblem(400, f"the body is not valid JSON: {e}")


class StrictJSONProvider(DefaultJSONProvider):
    """JSON as RFC 8259 has it: NaN and Infinity are not numbers, and nesting too deep is malformed input."""

    def loads(self, s: str | bytes, **kwargs: Any) -> Any:
        kwargs.setdefault("parse_constant", _reject_constant)
        try:
            return json.loads(s, **kwargs)
        except RecursionError:
            raise ValueError("JSON nested too deeply") from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")
