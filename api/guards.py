"""Checks run before every /v1 view: the bearer token (which says the request's team, optsched.service.tenants,
and is throttled per client address, api/throttle.py), then (for bodies) JSON that parses."""

from __future__ import annotations

import hmac
import json
import math
from datetime import UTC, datetime
from typing import Any

from flask import Request, g, request
from flask.json.provider import DefaultJSONProvider

from api.errors import TOO_MANY_GUESSES, ApiProblem
from api.services import services, tenants
from optsched.infra.store import DEFAULT_TEAM
from optsched.schema.errors import FieldError, InvalidWorkload
from optsched.schema.limits import check_document, json_path

# Documented on every /v1 operation; the empty alternative says the token is optional unless configured.
V1_SECURITY: list[dict[str, list[str]]] = [{"bearerAuth": []}, {}]
UNAUTHORIZED = "Missing or wrong bearer token (unless the server runs with OPTSCHED_AUTH=off)."
BEARER_SCHEME: dict[str, Any] = {
    "bearerAuth": {"type": "http", "scheme": "bearer",
                   "description": "A team's token (OPTSCHED_API_TOKENS, or OPTSCHED_API_TOKEN: the team `default`)."}
}


def security_requirement(authenticated: bool) -> list[dict[str, list[str]]]:
    """The OpenAPI `security` of every /v1 operation on a server with (or without: OPTSCHED_AUTH=off) tokens."""
    return [{"bearerAuth": []}] if authenticated else []


def note_arrival() -> None:
    """When the request arrived (before any check), for DELETE's "final before the request" rule."""
    g.arrived_at = datetime.now(UTC)


def arrival() -> datetime:
    return getattr(g, "arrived_at", None) or datetime.now(UTC)


def require_v1_token() -> None:
    """App-wide: every /v1 URL, known or not, answers 401 before anything else (404, 405) without the token."""
    if request.path == "/v1" or request.path.startswith("/v1/"):
        require_token()


def require_token() -> None:
    """Sets the request's team (`g.team`) from `Authorization: Bearer <token>`: 401 without a team's token, 429
    while the client address has sent too many wrong ones (api/throttle.py); every team is `default` when the
    server runs with OPTSCHED_AUTH=off."""
    if not tenants().enabled:
        g.team = DEFAULT_TEAM
        return
    refuse_while_throttled()
    team = bearer_team()
    if team is None:
        raise unauthorized("this service needs `Authorization: Bearer <token>` with your team's token")
    g.team = team


def _bearer() -> str | None:
    """The token of `Authorization: Bearer <token>`, or None without one."""
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    return given.strip() if scheme.lower() == "bearer" else None


def bearer_matches(token: str) -> bool:
    """Whether the request carries `Authorization: Bearer <token>` (compared in constant time)."""
    given = _bearer()
    return given is not None and hmac.compare_digest(given.encode(), token.encode())


def bearer_team() -> str | None:
    """The team whose token the request carries as `Authorization: Bearer <token>` (constant-time comparisons)."""
    given = _bearer()
    return None if given is None else tenants().team_of(given)


def unauthorized(message: str) -> ApiProblem:
    """The 401 of a request without the token it needs; a wrong token counts against its address's throttle."""
    if "Authorization" in request.headers:
        guess_failed()
    return ApiProblem(401, message, headers={"WWW-Authenticate": 'Bearer realm="optsched"'})


def _client() -> str:
    return request.remote_addr or ""


def refuse_while_throttled() -> None:
    """429 with Retry-After while this client address may try no credential (api/throttle.py)."""
    wait = services().throttle.wait_s(_client())
    if wait > 0:
        raise ApiProblem(
            429,
            "too many wrong tokens from this address; retry after Retry-After seconds",
            type=TOO_MANY_GUESSES,
            headers={"Retry-After": str(max(1, math.ceil(wait)))},
        )


def guess_failed() -> None:
    """This client address sent a wrong credential (its throttle bucket loses a token)."""
    services().throttle.failed(_client())


def require_json_body() -> None:
    """415 unless the body is declared JSON, 400 unless it parses (413 comes from reading it past the limit), 422
    when it is too deep or holds too many items to validate cheaply (optsched.schema.limits.check_document)."""
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
    """Says why a body failed to parse (Flask's own 400 hides it outside debug mode), in terms of the body only."""

    def on_json_loading_failed(self, e: ValueError | None) -> Any:
        if e is None:
            raise ApiProblem(415, f"send the body as application/json (got {self.mimetype or 'no Content-Type'})")
        if isinstance(e, InvalidWorkload):  # parsed, but with a duplicate key or a lone surrogate: a 422 with paths
            raise e
        raise ApiProblem(400, f"the body is not valid JSON: {_why(e)}")


def _why(e: ValueError) -> str:
    """What is wrong with the body, without the parser's internals (exception types, code positions)."""
    if isinstance(e, json.JSONDecodeError):
        return f"{e.msg} at line {e.lineno} column {e.colno}"
    if isinstance(e, UnicodeDecodeError):
        return f"it is not UTF-8 (byte {e.start} cannot be decoded)"
    if isinstance(e, _BodyError):
        return str(e)
    return "it does not parse"


class _BodyError(ValueError):
    """A parse failure whose message is written for the client."""


class _DuplicateKeys(dict):
    """An object that had a key twice (the first one repeated is `duplicate`); found and reported by path."""

    duplicate: str = ""


class StrictJSONProvider(DefaultJSONProvider):
    """JSON as RFC 8259 and I-JSON (RFC 7493) have it: NaN and Infinity are not numbers, nesting too deep is
    malformed input, and an object with a key twice or a string with an unpaired surrogate is rejected (422 with
    the path) instead of silently keeping the last value or failing later on output."""

    def loads(self, s: str | bytes, **kwargs: Any) -> Any:
        kwargs.setdefault("parse_constant", _reject_constant)
        duplicates: list[_DuplicateKeys] = []
        kwargs.setdefault("object_pairs_hook", lambda pairs: _object(pairs, duplicates))
        try:
            document = json.loads(s, **kwargs)
        except RecursionError:
            raise _BodyError("it is nested too deeply") from None
        text = s if isinstance(s, str) else s.decode("utf-8", "replace")
        errors: list[FieldError] = []
        if duplicates:
            errors += [FieldError(path, f"the key {d.duplicate!r} appears more than once in this object")
                       for path, d in _find(document, lambda v: isinstance(v, _DuplicateKeys))]
        if "\\ud" in text.lower():
            errors += [FieldError(path, "holds an unpaired UTF-16 surrogate, which is no character")
                       for path, _ in _find(document, _has_lone_surrogate)]
        if errors:
            raise InvalidWorkload(errors)
        return document


def _object(pairs: list[tuple[str, Any]], duplicates: list[_DuplicateKeys]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    seen: set[str] = set()
    marked = _DuplicateKeys(obj)
    marked.duplicate = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
    duplicates.append(marked)
    return marked


def _has_lone_surrogate(value: Any) -> bool:
    return isinstance(value, str) and any("\ud800" <= c <= "\udfff" for c in value)


def _find(document: Any, hit: Any) -> list[tuple[str, Any]]:
    """(JSON path, value) of every value or key for which `hit` is true, iteratively (the body is already parsed
    and bounded by the body size, so this is linear in it)."""
    found: list[tuple[str, Any]] = []
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(document, ())]
    while stack and len(found) < 100:
        value, parts = stack.pop()
        if hit(value):
            found.append((json_path(parts), value))
        if isinstance(value, dict):
            for key, child in value.items():
                if hit(key):
                    found.append((json_path((*parts, key)), key))
                stack.append((child, (*parts, key)))
        elif isinstance(value, list):
            stack.extend((child, (*parts, i)) for i, child in enumerate(value))
    return sorted(found, key=lambda f: f[0])


def _reject_constant(name: str) -> Any:
    raise _BodyError(f"{name} is not a number JSON allows")
