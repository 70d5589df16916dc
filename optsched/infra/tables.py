"""The `plans` table (every kind's jobs) as SQLAlchemy metadata: what the store reads and writes and what the
migrations build."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Column,
    DateTime,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
)

DEFAULT_DATABASE_URL = "sqlite:///./var/optsched.db"


# Rows from before resource kinds existed are plans (migration 0002); the kinds themselves are the service's
# (optsched.service.kinds): this table stores a kind's name and never interprets it.
FIRST_KIND = "plan"
# Rows from before teams existed belong to this team (migration 0004), as does everything a service without
# teams (one OPTSCHED_API_TOKEN, or OPTSCHED_AUTH=off) stores: the teams themselves are the service's
# (optsched.service.tenants).
DEFAULT_TEAM = "default"
TEAM_LENGTH = 32


class _UtcDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes in, aware UTC datetimes out, whatever the backend keeps (SQLite keeps naive text)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


metadata = MetaData()
plans = Table(
    "plans",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("kind", String(16), nullable=False, default=FIRST_KIND, server_default=FIRST_KIND),
    Column("status", String(16), nullable=False),  # a JobState
    Column("verdict", String(16), nullable=True),  # the kind's verdict on a finished solve (optimal, met, done, ...)
    Column("workload", JSON, nullable=False),
    Column("params", JSON, nullable=True),
    Column("plan", JSON, nullable=True),
    Column("team", String(TEAM_LENGTH), nullable=False, default=DEFAULT_TEAM, server_default=DEFAULT_TEAM),
    # Bytes of the row's documents (workload, params, result) as JSON: a team's storage use is their sum.
    Column("stored_bytes", Integer, nullable=False, default=0, server_default="0"),
    Column("idempotency_key", String(255), nullable=True),
    Column("submitted_at", _UtcDateTime, nullable=False),
    Column("started_at", _UtcDateTime, nullable=True),
    Column("finished_at", _UtcDateTime, nullable=True),
    Column("error", Text, nullable=True),
    Column("attempts", Integer, nullable=False, default=0),
    Index("ix_plans_submitted", "submitted_at", "id"),
    Index("ix_plans_status_submitted", "status", "submitted_at", "id"),
    Index("ix_plans_kind_submitted", "kind", "submitted_at", "id"),
    Index("ix_plans_finished", "finished_at", "id"),  # the jobs that ended since a time (/metrics, retention)
    Index("ix_plans_team_kind_submitted", "team", "kind", "submitted_at", "id"),
    UniqueConstraint("team", "idempotency_key", name="uq_plans_team_idempotency_key"),
)
