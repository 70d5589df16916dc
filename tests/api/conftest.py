"""Fixtures for the REST service: apps on a throwaway SQLite file, with or without a solver pool."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask

from api import create_app, services, shutdown


@pytest.fixture
def app_defaults() -> dict[str, Any]:
    """The REST tests' apps wait 50 ms for a plan before answering 202 (the defaults of tests/support/apps.py)."""
    return {"SYNC_WAIT_S": 0.05}


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
