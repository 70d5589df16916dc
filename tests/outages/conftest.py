"""Fixtures for the outage tests: dependencies of the tests' own (see tests/support/outages.py).

A `redis-server` on a free loopback port with its own data directory (the binary must be installed), a PostgreSQL
database created on the machine's server at 127.0.0.1:5432 (trust authentication, a user that may create
databases; dropped at the end), `optsched worker` pools and `optsched serve` as subprocesses. The tests skip,
saying why, only when PostgreSQL does not listen or redis-server is missing.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.outages import PG_PORT, REDIS_SERVER, Deployment, PgDatabase, RedisServer, listening, pg_admin_url


def _require_servers() -> None:
    if not listening(PG_PORT):
        pytest.skip(f"no PostgreSQL on 127.0.0.1:{PG_PORT}: start it to run the outage tests (README: Starting "
                    "PostgreSQL and Redis)")
    if not os.path.exists(REDIS_SERVER):
        pytest.skip("no redis-server binary: install redis-server to run the outage tests")


@pytest.fixture(scope="package")
def deployment(tmp_path_factory) -> Iterator[Deployment]:
    """Redis, a database, two one-process worker pools and an API of the outage tests' own."""
    _require_servers()
    d = Deployment(tmp_path_factory.mktemp("outages"))
    try:
        yield d.start()
    finally:
        d.stop()


@pytest.fixture
def own_redis(tmp_path) -> Iterator[RedisServer]:
    """A Redis server of this test alone."""
    _require_servers()
    server = RedisServer(tmp_path / "redis")
    server.start()
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture
def own_database() -> Iterator[PgDatabase]:
    """A PostgreSQL database of this test alone."""
    _require_servers()
    database = PgDatabase(pg_admin_url(), name=f"optsched_outage_{uuid.uuid4().hex[:10]}").create()
    try:
        yield database
    finally:
        database.drop()


@pytest.fixture
def spool_dir(tmp_path) -> Path:
    return tmp_path / "spool"
