"""Job states: `status` holds the lifecycle only (queued, solving, finished, cancelled, failed); a finished row's
verdict (optimal, met, done, ...) moves to the new `verdict` column. Downgrading puts the verdicts back.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

# The lifecycle states as 0002 stored them too; every other status there was a finished solve's verdict.
_LIFECYCLE = ("queued", "solving", "cancelled", "failed")


def upgrade() -> None:
    op.add_column("plans", sa.Column("verdict", sa.String(16), nullable=True))
    plans = sa.table("plans", sa.column("status", sa.String), sa.column("verdict", sa.String))
    op.execute(
        plans.update()
        .where(plans.c.status.not_in(_LIFECYCLE))
        .values(verdict=plans.c.status, status="finished")
    )


def downgrade() -> None:
    plans = sa.table("plans", sa.column("status", sa.String), sa.column("verdict", sa.String))
    op.execute(plans.update().where(plans.c.status == "finished").values(status=plans.c.verdict))
    with op.batch_alter_table("plans") as batch:
        batch.drop_column("verdict")
