"""Teams and retention: every row belongs to a `team` (rows from before are the `default` team's), idempotency keys
are unique per team instead of across the store, `stored_bytes` holds the size of a row's documents (a team's
storage use is their sum; rows from before are measured here). The retention sweep reads 0004's index on
`finished_at`.

Downgrading drops the columns and makes keys unique across the store again: where two teams used the same key, the
oldest row keeps it and the others lose it (they stay, without idempotency).

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

# The unique constraint 0001 made on idempotency_key has no name of ours: PostgreSQL names it itself, SQLite leaves it
# unnamed (batch mode names what it reflects by this convention), and a table made before migrations may hold it
# inline on the column, which SQLite's reflection does not see (the batch copy of the table then leaves it out).
_SQLITE_CONVENTION = {"uq": "uq_%(table_name)s_%(column_0_name)s"}
_TEAM_UNIQUE = "uq_plans_team_idempotency_key"


def _key_unique_name() -> str | None:
    """The name of the unique constraint on idempotency_key alone, as batch mode sees it; None: none is seen."""
    for unique in sa.inspect(op.get_bind()).get_unique_constraints("plans"):
        if unique["column_names"] == ["idempotency_key"]:
            return unique["name"] or "uq_plans_idempotency_key"
    return None


def upgrade() -> None:
    with op.batch_alter_table("plans", naming_convention=_SQLITE_CONVENTION) as batch:
        batch.add_column(sa.Column("team", sa.String(32), nullable=False, server_default="default"))
        batch.add_column(sa.Column("stored_bytes", sa.Integer(), nullable=False, server_default="0"))
        old_unique = _key_unique_name()
        if old_unique is not None:
            batch.drop_constraint(old_unique, type_="unique")
        batch.create_unique_constraint(_TEAM_UNIQUE, ["team", "idempotency_key"])
        batch.create_index("ix_plans_team_kind_submitted", ["team", "kind", "submitted_at", "id"])
    plans = sa.table("plans", sa.column("workload", sa.JSON), sa.column("params", sa.JSON),
                     sa.column("plan", sa.JSON), sa.column("stored_bytes", sa.Integer))

    def size(column: sa.ColumnClause) -> sa.ColumnElement:
        return sa.func.coalesce(sa.func.length(sa.cast(column, sa.Text)), 0)

    op.execute(plans.update().values(stored_bytes=size(plans.c.workload) + size(plans.c.params) + size(plans.c.plan)))


def downgrade() -> None:
    plans = sa.table("plans", sa.column("id", sa.String), sa.column("idempotency_key", sa.String),
                     sa.column("submitted_at", sa.DateTime))
    older = sa.alias(plans, "older")
    taken = sa.exists().where(
        older.c.idempotency_key == plans.c.idempotency_key,
        sa.or_(older.c.submitted_at < plans.c.submitted_at,
               sa.and_(older.c.submitted_at == plans.c.submitted_at, older.c.id < plans.c.id)),
    )
    op.execute(plans.update().where(plans.c.idempotency_key.is_not(None), taken).values(idempotency_key=None))
    with op.batch_alter_table("plans") as batch:
        batch.drop_index("ix_plans_team_kind_submitted")
        batch.drop_constraint(_TEAM_UNIQUE, type_="unique")
        batch.create_unique_constraint("uq_plans_idempotency_key", ["idempotency_key"])
        batch.drop_column("stored_bytes")
        batch.drop_column("team")
