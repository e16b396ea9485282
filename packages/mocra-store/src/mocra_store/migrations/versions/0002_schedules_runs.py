"""Schedules and run records.

Revision ID: 0002
Revises: 0001
Create Date: 2025-01-02 00:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    """Create the schedules and run_records tables."""
    op.create_table(
        "schedules",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("module_id", sa.Integer(), nullable=False),
        sa.Column("account_id", sa.Integer(), nullable=True),
        sa.Column("platform_id", sa.Integer(), nullable=True),
        sa.Column("cron", sa.String(length=200), nullable=False),
        sa.Column("misfire", sa.Double(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        *(
            sa.ForeignKeyConstraint(
                [f"{target[:-1]}_id"],
                [f"{target}.id"],
                name=f"fk_schedules_{target[:-1]}_id_{target}",
                ondelete="CASCADE",
            )
            for target in ("modules", "accounts", "platforms")
        ),
        sa.PrimaryKeyConstraint("id", name="pk_schedules"),
    )
    for column in ("module_id", "account_id", "platform_id"):
        op.create_index(f"ix_schedules_{column}", "schedules", [column])

    op.create_table(
        "run_records",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.String(length=200), nullable=False),
        sa.Column("account", sa.String(length=200), nullable=True),
        sa.Column("platform", sa.String(length=200), nullable=True),
        sa.Column("module", sa.String(length=200), nullable=False),
        sa.Column("worker", sa.String(length=200), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("stats", sa.JSON(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.CheckConstraint(
            "status IN ('running', 'succeeded', 'failed', 'cancelled')", name="ck_run_records_status"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_run_records"),
        sa.UniqueConstraint("run_id", name="uq_run_records_run_id"),
    )
    for column in ("account", "module", "started_at"):
        op.create_index(f"ix_run_records_{column}", "run_records", [column])


def downgrade() -> None:
    """Drop the schedules and run_records tables."""
    op.drop_table("run_records")
    op.drop_table("schedules")
