"""The store, the solve queue, the retention sweeper and the guess throttle an app uses, kept in `app.extensions`
by create_app; and the teams it knows (from its config, so a test may change the tokens of a running app)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from flask import Flask, current_app, g

from api.throttle import Throttle
from optsched.infra.queue import SolveQueue
from optsched.infra.retention import RetentionSweeper
from optsched.infra.store import DEFAULT_TEAM, PlanStore
from optsched.service.tenants import Admission, Tenants, tenants_of

EXTENSION = "optsched"


@dataclass(frozen=True)
class Services:
    store: PlanStore
    queue: SolveQueue
    retention: RetentionSweeper
    throttle: Throttle


def services(app: Flask | None = None) -> Services:
    return (app or current_app).extensions[EXTENSION]


def tenants(app: Flask | None = None) -> Tenants:
    """The teams of the app's current config (optsched.service.tenants; checked at create_app)."""
    config = (app or current_app).config
    return _tenants(config.get("AUTH", "on"), config.get("API_TOKEN"), config.get("API_TOKENS"))


@lru_cache(maxsize=8)
def _tenants(auth: str, token: str | None, tokens: str | None) -> Tenants:
    return tenants_of({"AUTH": auth, "API_TOKEN": token, "API_TOKENS": tokens})


def admission() -> Admission:
    """What the requesting team may still store (its queue share and quota)."""
    return Admission.of(current_app.config, tenants())


def current_team() -> str:
    """The team of the request, set by the token check (api/guards.py); `default` without authentication."""
    return getattr(g, "team", None) or DEFAULT_TEAM
