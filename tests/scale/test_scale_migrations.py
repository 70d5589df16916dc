"""The store's schema comes from Alembic migrations, on SQLite and PostgreSQL alike, and equals store.metadata."""

from __future__ import annotations

import threading
import uuid
from datetime import UTC, datetime

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, inspect, text

from optsched.infra.migrations import alembic_config, current_revision, head_revision
from optsched.infra.store import JobState, PlanStore, metadata
from tests.api.helpers import tiny_workload
from tests.api.test_api_tenants import ONE_FITS, creates_racing

pytestmark = pytest.mark.slow  # RQ workers on real Redis and PostgreSQL


def schema_difference(engine) -> list:
    """What Alembic's autogenerate would change to make the database match store.metadata ([] = identical)."""
    with engine.connect() as c:
        context = MigrationContext.configure(c, opts={"compare_type": True, "compare_server_default": True})
        return compare_metadata(context, metadata)


@pytest.fixture
def pg_schema_url(pg_url):
    """The session database with its own, fresh PostgreSQL schema first on the search path."""
    schema = f"mig_{uuid.uuid4().hex[:8]}"
    admin = create_engine(pg_url)
    with admin.begin() as c:
        c.execute(text(f'CREATE SCHEMA "{schema}"'))
    yield f"{pg_url}?options=-csearch_path%3D{schema}"
    with admin.begin() as c:
        c.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
    admin.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def fresh_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/fresh.db"
    return request.getfixturevalue("pg_schema_url")


def test_a_new_database_is_migrated_to_exactly_the_tables_of_the_store(fresh_url):
    store = PlanStore(fresh_url)
    try:
        assert schema_difference(store.engine) == []
        with store.engine.connect() as c:
            assert current_revision(c) == head_revision()
        record, _ = store.create(tiny_workload(), "key-1")
        assert store.claim(record.id).status == JobState.solving
        PlanStore(fresh_url).close()  # opening it again is a no-op upgrade
        assert store.get(record.id).attempts == 1
    finally:
        store.close()


def test_a_database_made_before_migrations_is_adopted_and_upgraded_keeping_its_rows(tmp_path):
    url = f"sqlite:///{tmp_path}/old.db"
    engine = create_engine(url)
    with engine.begin() as c:  # what optsched 0.1 left: its `plans` table, no alembic_version
        config = alembic_config(c)
        command.upgrade(config, "0001")
        c.execute(text("DROP TABLE alembic_version"))
        c.execute(
            text(
                "INSERT INTO plans (id, status, workload, submitted_at, attempts) VALUES ('a', 'optimal', '{}', :t, 1)"
            ),
            {"t": datetime(2026, 11, 1, tzinfo=UTC).replace(tzinfo=None)},
        )
    engine.dispose()

    store = PlanStore(url)
    try:
        old = store.get("a")
        assert old.outcome == "optimal" and old.kind == "plan" and old.params is None
        assert schema_difference(store.engine) == []
        assert "alembic_version" in inspect(store.engine).get_table_names()
    finally:
        store.close()


# Statuses as revision 0002 stored them: the lifecycle, or a finished solve's verdict of any kind.
STORED_0002 = {"q": "queued", "s": "solving", "c": "cancelled", "f": "failed", "o": "optimal", "m": "met", "d": "done"}


def test_revision_0003_moves_verdicts_out_of_the_status_and_its_downgrade_puts_them_back(fresh_url):
    engine = create_engine(fresh_url)
    with engine.begin() as c:
        command.upgrade(alembic_config(c), "0002")
        for row_id, status in STORED_0002.items():
            c.execute(
                text("INSERT INTO plans (id, kind, status, workload, submitted_at, attempts) "
                     "VALUES (:id, 'plan', :status, '{}', :t, 1)"),
                {"id": row_id, "status": status, "t": datetime(2026, 11, 1, tzinfo=UTC)},
            )
    store = PlanStore(fresh_url)  # upgrades to the head
    try:
        rows = {row_id: store.get(row_id) for row_id in STORED_0002}
    finally:
        store.close()
    assert {row_id: r.outcome for row_id, r in rows.items()} == STORED_0002  # what the API shows is unchanged
    assert {row_id: r.status for row_id, r in rows.items()} == {
        "q": JobState.queued, "s": JobState.solving, "c": JobState.cancelled, "f": JobState.failed,
        "o": JobState.finished, "m": JobState.finished, "d": JobState.finished,
    }
    assert [r.verdict for r in rows.values()] == [None, None, None, None, "optimal", "met", "done"]
    with engine.begin() as c:
        command.downgrade(alembic_config(c), "0002")
        assert dict(c.execute(text("SELECT id, status FROM plans")).all()) == STORED_0002
    engine.dispose()


def test_processes_starting_together_on_a_new_postgresql_database_migrate_it_once(pg_schema_url):
    errors: list[BaseException] = []

    def open_store() -> None:
        try:
            PlanStore(pg_schema_url).close()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_store) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    engine = create_engine(pg_schema_url)
    with engine.connect() as c:
        assert c.execute(text("SELECT count(*) FROM alembic_version")).scalar() == 1
    assert schema_difference(engine) == []
    engine.dispose()


def test_the_revisions_are_packaged_so_an_installed_wheel_migrates():
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    setuptools = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert {"optsched.infra.migrations", "optsched.infra.migrations.versions"} <= set(setuptools["packages"])
    assert "script.py.mako" in setuptools["package-data"]["optsched.infra.migrations"]
    versions = root / "optsched" / "infra" / "migrations" / "versions"
    assert any(p.name.startswith(head_revision() + "_") for p in versions.glob("*.py"))


def test_revision_0005_gives_rows_to_the_default_team_with_their_sizes_and_its_downgrade_keeps_one_key(fresh_url):
    engine = create_engine(fresh_url)
    moment = datetime(2026, 11, 1, tzinfo=UTC)
    with engine.begin() as c:
        command.upgrade(alembic_config(c), "0003")
        c.execute(text("INSERT INTO plans (id, kind, status, verdict, workload, plan, idempotency_key, submitted_at, "
                       "attempts) VALUES ('old', 'plan', 'finished', 'optimal', '{\"name\": \"w\"}', '{\"a\": 1}', "
                       "'k', :t, 1)"), {"t": moment})
    store = PlanStore(fresh_url)  # upgrades to the head
    try:
        old = store.get("old")
        assert old.team == "default" and old.outcome == "optimal"
        assert old.stored_bytes >= len('{"name":"w"}') + len('{"a":1}')  # measured by the migration
        assert store.get_by_key("k", "default").id == "old" and store.get_by_key("k", "team-b") is None
        theirs, created = store.create(tiny_workload(), "k", team="team-b")  # the same key, another team's
        assert created and theirs.id != "old"
        again, created = store.create(tiny_workload(), "k", team="team-b")
        assert not created and again.id == theirs.id  # still unique within the team
        assert schema_difference(store.engine) == []
    finally:
        store.close()
    with engine.begin() as c:
        command.downgrade(alembic_config(c), "0003")
        keys = dict(c.execute(text("SELECT id, idempotency_key FROM plans")).all())
    assert keys == {"old": "k", theirs.id: None}  # the oldest row keeps the key, the other stays without it
    with engine.begin() as c:
        command.upgrade(alembic_config(c), "head")  # and up again
    engine.dispose()


@pytest.mark.parametrize("limit, refusal", [("share", "TeamQueueFull"), ("quota", "QuotaExceeded")])
def test_two_concurrent_submits_of_a_team_cannot_both_pass_its_share_or_quota_on_postgresql(
    pg_schema_url, limit, refusal
):
    """The team's advisory lock (optsched.infra.store, _lock_team) makes the check and the insert one; another
    team does not wait for it."""
    store = PlanStore(pg_schema_url)
    try:
        assert creates_racing(store, ONE_FITS[limit]) == sorted(["created", refusal])
        assert store.usage("team-a").unfinished == 1
        assert creates_racing(store, ONE_FITS[limit], team="team-b") == sorted(["created", refusal])
    finally:
        store.close()
