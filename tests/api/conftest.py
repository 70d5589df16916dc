"""Fixtures for the REST service: apps on a throwaway SQLite file, with or without a solver pool."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask

from api import create_app, services, shutdown


@pytest.fixture
def make_app(tmp_path) -> Callable[..., Flask]:
    """create_app on a fresh SQLite file; every app made is shut down after the test."""
    apps: list[Flask] = []

    def make(**config: Any) -> Flask:
        settings = {
            "DATABASE_URL": f"sqlite:///{tmp_path}/plans-{len(apps)}.db",
            "START_WORKERS": False,
            "SYNC_WAIT_S": 0.05,
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
def app(make_app) -> Flask:
    """An app whose plans only queue (no solver processes): fast, for everything but finished plans."""
    return make_app()


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture(scope="session")
def live_app(tmp_path_factory) -> Flask:
    """One app with a one-process solver pool, shared by the tests that need finished plans."""
    path = tmp_path_factory.mktemp("live") / "plans.db"
    app = create_app(
        {"DATABASE_URL": f"sqlite:///{path}", "WORKERS": 1, "SYNC_WAIT_S": 10, "API_TOKEN": None, "AUTH": "off",
         "START_WORKERS": True}
    )
    app.config["TESTING"] = True
    yield app
    shutdown(app)


@pytest.fixture
def live(live_app):
    return live_app.test_client()


@pytest.fixture
def live_pool(live_app):
    return services(live_app).queue
