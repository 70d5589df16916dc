"""An index on when jobs ended (`finished_at`, `id`): /metrics reads the jobs that ended since its last scrape
(PlanStore.finished_since), which without it scans the whole table, documents included, at every scrape.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-04
"""

from __future__ import annotations

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_plans_finished", "plans", ["finished_at", "id"])


def downgrade() -> None:
    with op.batch_alter_table("plans") as batch:
        batch.drop_index("ix_plans_finished")
