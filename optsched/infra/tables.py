"""The `plans` table as SQLAlchemy metadata: what the store reads and writes and what the migrations build."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum

from sqlalchemy import JSON, Column, DateTime, Index, Integer, MetaData, String, Table, Text, TypeDecorator

DEFAULT_DATABASE_URL = "sqlite:///./var/optsched.db"


class ResourceKind(StrEnum):
    """What a row holds, and so which Python API its worker calls (optsched.service.kinds.KINDS)."""

    plan = "plan"  # optsched.plan(workload)
    night = "night"  # optsched.plan_night(queue, **params)
    frontier = "frontier"  # optsched.frontier(workload, **params)
    queueing = "queueing"  # optsched.queueing.analyze(study, **params)
    replan = "replan"  # optsched.replan(workload, plan, change): the parent plan's id in params


class _UtcDateTime(TypeDecorator):
    """Aware UTC datetimes in, aware UTC datetimes out, whatever the backend keeps (SQLite keeps naive text)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect) -> datetime | None:
        if value is None:
            return None
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


metadata = MetaData()
plans = Table(
    "plans",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("kind", String(16), nullable=False, default=ResourceKind.plan.value, server_default=ResourceKind.plan.value),
    Column("status", String(16), nullable=False),
    Column("workload", JSON, nullable=False),
    Column("params", JSON, nullable=True),
    Column("plan", JSON, nullable=True),
    Column("idempotency_key", String(255), nullable=True, unique=True),
    Column("submitted_at", _UtcDateTime, nullable=False),
    Column("started_at", _UtcDateTime, nullable=True),
    Column("finished_at", _UtcDateTime, nullable=True),
    Column("error", Text, nullable=True),
    Column("attempts", Integer, nullable=False, default=0),
    Index("ix_plans_submitted", "submitted_at", "id"),
    Index("ix_plans_status_submitted", "status", "submitted_at", "id"),
    Index("ix_plans_kind_submitted", "kind", "submitted_at", "id"),
)
