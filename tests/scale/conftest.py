"""Fixtures for the scale-out tests: a throwaway PostgreSQL database, a private RQ queue, real `optsched worker`s.

Isolation: each test session creates its own database `optsched_test_<token>` (dropped at the end) and its own
RQ queue name on Redis DB OPTSCHED_TEST_REDIS_DB (default 15); at the end it deletes only the keys it made (its
queue's keys, its workers' registrations, the jobs of its rows). Tests that need the servers skip, saying so,
only when nothing listens on 127.0.0.1:5432 / 6379; a server that listens but refuses us fails the test.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.outages import WorkerFleet, listening, pg_admin_url

PG_HOST, PG_PORT, REDIS_PORT = "127.0.0.1", 5432, 6379
REDIS_DB = int(os.environ.get("OPTSCHED_TEST_REDIS_DB", "15"))
OPTSCHED = Path(sys.executable).with_name("optsched")
HOW_TO_START = "see README.md, 'Starting PostgreSQL and Redis'"
# Short lease and grace in tests: a dead worker's row is requeued within about 5 s (two leases and a sweep).
LEASE_S, GRACE_S = 2.0, 2.0


@pytest.fixture(scope="session")
def token() -> str:
    return uuid.uuid4().hex[:10]


@contextmanager
def fresh_database(name: str) -> Iterator[str]:
    """SQLAlchemy URL of a new database `name`, dropped afterwards."""
    import psycopg

    admin = pg_admin_url()
    with psycopg.connect(admin, autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{name}"')
    user = admin.split("//", 1)[1].split("@", 1)[0]
    try:
        yield f"postgresql+psycopg://{user}@{PG_HOST}:{PG_PORT}/{name}"
    finally:
        with psycopg.connect(admin, autocommit=True) as c:
            c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def pg_url(token) -> Iterator[str]:
    """SQLAlchemy URL of a fresh database for this session, dropped afterwards."""
    if not listening(PG_PORT):
        pytest.skip(f"no PostgreSQL on {PG_HOST}:{PG_PORT}: start it to run the scale-out tests ({HOW_TO_START})")
    with fresh_database(f"optsched_test_{token}") as url:
        yield url


@pytest.fixture
def private_pg_url(pg_url, token) -> Iterator[str]:
    """A database of this test alone: the session's worker pools sweep the session's database, and a row they adopt
    is not the test's to count (a lost row was requeued and claimed by them under load)."""
    with fresh_database(f"optsched_test_{token}_{uuid.uuid4().hex[:6]}") as url:
        yield url


@pytest.fixture(scope="session")
def redis_url() -> str:
    if not listening(REDIS_PORT):
        pytest.skip(f"no Redis on {PG_HOST}:{REDIS_PORT}: start it to run the scale-out tests ({HOW_TO_START})")
    return f"redis://{PG_HOST}:{REDIS_PORT}/{REDIS_DB}"


def delete_row_keys(r, url: str) -> None:
    """Deletes the Redis keys of every row of the database at `url` (its RQ jobs, leases)."""
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    try:
        with engine.connect() as c:
            ids = [row[0] for row in c.execute(text("SELECT id FROM plans"))]
    except Exception:  # noqa: BLE001 - no table: no rows, no jobs
        ids = []
    engine.dispose()
    for plan_id in ids:
        for key in r.scan_iter(match=f"*{plan_id}*", count=1000):
            r.delete(key)


@pytest.fixture(scope="session")
def redis_cleanup(redis_url, token, pg_url) -> Iterator[list[str]]:
    """Yields a list tests add their own queue names to; deletes every key of those queues and of the rows."""
    from redis import Redis

    queues: list[str] = [f"optsched-test-{token}"]
    yield queues
    r = Redis.from_url(redis_url)
    for name in queues:
        for member in r.smembers(f"rq:workers:{name}"):
            r.srem("rq:workers", member)
            r.delete(member)
        r.srem("rq:queues", f"rq:queue:{name}")
        for key in r.scan_iter(match=f"*{name}*", count=1000):
            r.delete(key)
    delete_row_keys(r, pg_url)
    for key in r.scan_iter(match="rq:worker:*", count=1000):  # stopped or killed workers' expiring records
        if any(name.encode() in (r.hget(key, "queues") or b"") for name in queues):
            r.delete(key)
    r.close()


@pytest.fixture(scope="session")
def queue_name(redis_cleanup) -> str:
    return redis_cleanup[0]


@pytest.fixture
def private_queue(redis_cleanup, token) -> str:
    """A queue name of this test's own, which the session's worker processes do not listen on."""
    name = f"optsched-test-{token}-{uuid.uuid4().hex[:6]}"
    redis_cleanup.append(name)
    return name


@pytest.fixture(scope="session")
def worker_env(pg_url, redis_url, queue_name) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPTSCHED_")}
    env.update(
        OPTSCHED_DATABASE_URL=pg_url,
        OPTSCHED_QUEUE_URL=redis_url,
        OPTSCHED_QUEUE_NAME=queue_name,
        OPTSCHED_LEASE_S=str(LEASE_S),
        OPTSCHED_SOLVE_GRACE_S=str(GRACE_S),
    )
    return env


@pytest.fixture(scope="session")
def fleet(worker_env, tmp_path_factory) -> Iterator[WorkerFleet]:
    """Two one-process worker pools on the session's queue, started once (tests may kill one: `ensure_two`)."""
    f = WorkerFleet(worker_env, tmp_path_factory.mktemp("workers"))
    try:
        for _ in range(2):
            f.start()
        for p in f.processes:
            f.wait_listening(p)
        yield f
    finally:
        f.stop_all()


@pytest.fixture
def workers(fleet) -> WorkerFleet:
    """The session's fleet with two live pools (a pool a previous test killed is replaced)."""
    while len(fleet.alive()) < 2:
        fleet.wait_listening(fleet.start())
    return fleet


@pytest.fixture(scope="session")
def rq_app(pg_url, redis_url, queue_name):
    """The API on PostgreSQL with the RQ queue (the Flask test client talks to it; workers are subprocesses)."""
    from api import create_app, shutdown

    app = create_app(
        {"DATABASE_URL": pg_url, "QUEUE_URL": redis_url, "QUEUE_NAME": queue_name, "SYNC_WAIT_S": 15,
         "API_TOKEN": None, "AUTH": "off", "SOLVE_GRACE_S": GRACE_S}
    )
    app.config["TESTING"] = True
    yield app
    shutdown(app)


@pytest.fixture
def rq_client(rq_app, workers):
    return rq_app.test_client()
