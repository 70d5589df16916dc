"""Alembic's env.py: migrate the connection `optsched.infra.migrations.upgrade` passes in, or the configured URL."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, create_engine

from optsched.infra.tables import metadata

config = context.config


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        compare_type=True,
        render_as_batch=connection.dialect.name == "sqlite",  # SQLite alters tables by copying them
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    context.configure(url=config.get_main_option("sqlalchemy.url"), target_metadata=metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
elif config.attributes.get("connection") is not None:
    _run(config.attributes["connection"])
else:
    url = config.get_main_option("sqlalchemy.url")
    if url is None:
        raise RuntimeError("no sqlalchemy.url in the Alembic configuration (optsched.infra.migrations.alembic_config)")
    engine = create_engine(url)
    with engine.begin() as connection:
        _run(connection)
    engine.dispose()
