"""The app and server fixtures the REST, hardening and reliability tests share (registered for the whole suite by
tests/conftest.py): in-process apps on throwaway SQLite files and real servers on loopback, each stopped after its
test. A folder changes the apps' defaults by overriding `app_defaults` (tests/api/conftest.py does)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask import Flask

from api import create_app, shutdown
from tests.support.server import LiveServer


@pytest.fixture
def app_defaults() -> dict[str, Any]:
    """Settings every `make_app` app starts from: answer 202 at once (no synchronous wait)."""
    return {"SYNC_WAIT_S": 0}


@pytest.fixture
def make_app(tmp_path, app_defaults) -> Iterator[Callable[..., Flask]]:
    """create_app on a fresh SQLite file, no solver processes unless asked; every app is shut down after."""
    apps: list[Flask] = []

    def make(**config: Any) -> Flask:
        settings = {
            "DATABASE_URL": f"sqlite:///{tmp_path}/app-{len(apps)}/plans.db",
            "START_WORKERS": False,
            "API_TOKEN": None,
            **app_defaults,
            **config,
        }
        # Without a token the app must be told to run without authentication (optsched.service.tenants).
        settings.setdefault("AUTH", "on" if settings["API_TOKEN"] or settings.get("API_TOKENS") else "off")
        app = create_app(settings)
        app.config["TESTING"] = True
        apps.append(app)
        return app

    yield make
    for app in apps:
        shutdown(app)


@pytest.fixture
def live_server(tmp_path) -> Iterator[Callable[..., LiveServer]]:
    """Real `optsched serve` processes (own process groups); every one is SIGKILLed after the test."""
    servers: list[LiveServer] = []

    def make(name: str = "server", **kwargs: Any) -> LiveServer:
        server = LiveServer(database=tmp_path / f"{name}.db", log=tmp_path / f"{name}.log", **kwargs)
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.kill()
