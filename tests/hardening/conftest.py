"""Fixtures for the hardening tests (issue 12): in-process apps on throwaway SQLite files and real servers on
loopback, each stopped after its test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from api import create_app, shutdown
from tests.support.server import LiveServer

TOKEN = "hardening-token-7d41c0e9"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def make_app(tmp_path) -> Iterator[Callable[..., Flask]]:
    """create_app on a fresh SQLite file, no solver processes unless asked; every app is shut down after."""
    apps: list[Flask] = []

    def make(**config: Any) -> Flask:
        settings = {
            "DATABASE_URL": f"sqlite:///{tmp_path}/app-{len(apps)}/plans.db",
            "START_WORKERS": False,
            "SYNC_WAIT_S": 0,
            "API_TOKEN": None,
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


def log_of(server: LiveServer) -> str:
    return Path(server.log).read_text(errors="replace")


def problem(response, status: int) -> dict:
    """The problem document of a Flask test response, checked: status, media type, `status` member."""
    assert response.status_code == status, (response.status_code, response.get_data(as_text=True)[:500])
    assert response.mimetype == "application/problem+json", response.mimetype
    body = response.get_json()
    assert body["status"] == status
    return body


def paths(response) -> list[str]:
    return [e["path"] for e in problem(response, 422)["errors"]]
