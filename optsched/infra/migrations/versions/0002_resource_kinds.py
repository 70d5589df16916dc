"""Resource kinds: `kind` (plan, night, frontier; rows from before are plans) and `params`.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("plans", sa.Column("kind", sa.String(16), nullable=False, server_default="plan"))
    op.add_column("plans", sa.Column("params", sa.JSON(), nullable=True))
    op.create_index("ix_plans_kind_submitted", "plans", ["kind", "submitted_at", "id"])


def downgrade() -> None:
    with op.batch_alter_table("plans") as batch:
        batch.drop_index("ix_plans_kind_submitted")
        batch.drop_column("params")
        batch.drop_column("kind")
