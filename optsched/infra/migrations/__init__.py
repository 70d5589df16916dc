"""The store's schema, managed by Alembic: `upgrade(engine)` brings any database to the newest revision.

`optsched.infra.store.PlanStore` calls `upgrade` when it opens a database, on SQLite and PostgreSQL alike, so every
API process, worker and batch run finds the schema it expects. The revisions ship inside the package
(`optsched/infra/migrations/versions`), so an installed wheel migrates too. Concurrent starts are safe: on PostgreSQL
the upgrade holds an advisory lock in its (transactional DDL) transaction; elsewhere a start that loses the race
sees the schema already at head and retries.

A database made before migrations existed (optsched 0.1 created `plans` directly) has no `alembic_version`: it is
stamped at the revision its columns match, then upgraded.

Maintainers: `python -m optsched.service.migrate revision --autogenerate -m "what changed"` (against
OPTSCHED_DATABASE_URL, by default the SQLite file) writes a new revision from the difference between
`optsched.infra.store.metadata` and the database; `python -m optsched.service.migrate history` lists them.
"""

from __future__ import annotations

import logging
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, inspect, text
from sqlalchemy.exc import DBAPIError

log = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
# pg_advisory_xact_lock key: "optsched" in ASCII, so that other applications' locks do not collide with ours.
ADVISORY_LOCK_KEY = int.from_bytes(b"optsched", "big") & 0x7FFF_FFFF_FFFF_FFFF
RACE_RETRIES = 3


def alembic_config(connection: Connection | None = None, url: str | None = None) -> Config:
    """An Alembic configuration without an ini file: the scripts in this package, on `connection` (or `url`)."""
    config = Config()
    config.set_main_option("script_location", str(HERE))
    config.set_main_option("path_separator", "os")
    if url is not None:
        config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if head is None:
        raise RuntimeError("no migration revisions found in optsched/infra/migrations/versions; reinstall optsched")
    return head


def current_revision(connection: Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()


def upgrade(engine: Engine) -> None:
    """Migrate the database to the newest revision (a no-op, one query, when it is there already)."""
    head = head_revision()
    for attempt in range(RACE_RETRIES):
        try:
            with engine.begin() as connection:
                if connection.dialect.name == "postgresql":
                    connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": ADVISORY_LOCK_KEY})
                if current_revision(connection) == head:
                    return
                config = alembic_config(connection)
                _stamp_unversioned(connection, config)
                command.upgrade(config, "head")
                log.info("database schema upgraded to revision %s", head)
            return
        except DBAPIError:
            # Another process created the same tables first (SQLite has no advisory lock); its upgrade is done.
            if attempt == RACE_RETRIES - 1:
                raise
            log.info("concurrent schema upgrade detected; checking again")


def _stamp_unversioned(connection: Connection, config: Config) -> None:
    """A `plans` table without `alembic_version`: made by optsched 0.1 (revision 0001), or 0002 with `kind`."""
    tables = set(inspect(connection).get_table_names())
    if "plans" not in tables or "alembic_version" in tables:
        return
    columns = {c["name"] for c in inspect(connection).get_columns("plans")}
    revision = "0002" if "kind" in columns else "0001"
    log.info("adopting a database made before migrations at revision %s", revision)
    command.stamp(config, revision)


def main(url: str, argv: list[str] | None = None) -> None:
    """Run an Alembic command line (`revision`, `history`, `upgrade head`, ...) against the database at `url`;
    `python -m optsched.service.migrate` runs it against OPTSCHED_DATABASE_URL."""
    from alembic.config import CommandLine

    cli = CommandLine(prog="python -m optsched.service.migrate")
    options = cli.parser.parse_args(argv)
    cli.run_cmd(alembic_config(url=url), options)
