"""Tenants: accounts, platforms, modules, their relations, middlewares and credentials.

Revision ID: 0001
Revises:
Create Date: 2025-01-01 00:00:00
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None


def _named(table: str, *extra: sa.Column[Any] | sa.Constraint) -> None:
    op.create_table(
        table,
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        *extra,
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=f"pk_{table}"),
        sa.UniqueConstraint("name", name=f"uq_{table}_name"),
    )


def _fk(
    table: str, column: str, target: str, *, nullable: bool = False
) -> tuple[sa.Column[int], sa.Constraint]:
    return (
        sa.Column(column, sa.Integer(), nullable=nullable),
        sa.ForeignKeyConstraint(
            [column], [f"{target}.id"], name=f"fk_{table}_{column}_{target}", ondelete="CASCADE"
        ),
    )


def _relation(table: str, left: tuple[str, str], right: tuple[str, str]) -> None:
    (left_col, left_fk), (right_col, right_fk) = _fk(table, *left), _fk(table, *right)
    op.create_table(
        table,
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("priority", sa.Integer(), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        left_col,
        right_col,
        left_fk,
        right_fk,
        sa.PrimaryKeyConstraint("id", name=f"pk_{table}"),
        sa.UniqueConstraint(left[0], right[0], name=f"uq_{table}_{left[0]}_{right[0]}"),
    )
    for column in (left[0], right[0]):
        op.create_index(f"ix_{table}_{column}", table, [column])


def upgrade() -> None:
    """Create the tenant tables."""
    _named("accounts", sa.Column("created_at", sa.DateTime(timezone=True), nullable=False))
    _named("platforms")
    _named("modules", sa.Column("version", sa.String(length=50), nullable=False))
    _named(
        "middlewares",
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.CheckConstraint("kind IN ('download', 'data')", name="ck_middlewares_kind"),
    )
    _relation("account_platforms", ("account_id", "accounts"), ("platform_id", "platforms"))
    _relation("module_accounts", ("module_id", "modules"), ("account_id", "accounts"))
    _relation("module_platforms", ("module_id", "modules"), ("platform_id", "platforms"))

    (module_col, module_fk), (middleware_col, middleware_fk) = (
        _fk("module_middlewares", "module_id", "modules"),
        _fk("module_middlewares", "middleware_id", "middlewares"),
    )
    op.create_table(
        "module_middlewares",
        sa.Column("id", sa.Integer(), nullable=False),
        module_col,
        middleware_col,
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        module_fk,
        middleware_fk,
        sa.PrimaryKeyConstraint("id", name="pk_module_middlewares"),
        sa.UniqueConstraint(
            "module_id", "middleware_id", name="uq_module_middlewares_module_id_middleware_id"
        ),
    )
    op.create_index("ix_module_middlewares_module_id", "module_middlewares", ["module_id"])
    op.create_index("ix_module_middlewares_middleware_id", "module_middlewares", ["middleware_id"])

    (account_col, account_fk), (platform_col, platform_fk) = (
        _fk("credentials", "account_id", "accounts"),
        _fk("credentials", "platform_id", "platforms", nullable=True),
    )
    op.create_table(
        "credentials",
        sa.Column("id", sa.Integer(), nullable=False),
        account_col,
        platform_col,
        sa.Column("username", sa.String(length=200), nullable=False),
        sa.Column("secret", sa.Text(), nullable=False),
        sa.Column("extra", sa.JSON(), nullable=False),
        account_fk,
        platform_fk,
        sa.PrimaryKeyConstraint("id", name="pk_credentials"),
        sa.UniqueConstraint("account_id", "platform_id", name="uq_credentials_account_id_platform_id"),
    )
    op.create_index("ix_credentials_account_id", "credentials", ["account_id"])
    op.create_index("ix_credentials_platform_id", "credentials", ["platform_id"])
    op.create_index(
        "uq_credentials_account_id_any_platform",
        "credentials",
        ["account_id"],
        unique=True,
        sqlite_where=sa.text("platform_id IS NULL"),
        postgresql_where=sa.text("platform_id IS NULL"),
    )


def downgrade() -> None:
    """Drop the tenant tables."""
    for table in (
        "credentials",
        "module_middlewares",
        "module_platforms",
        "module_accounts",
        "account_platforms",
        "middlewares",
        "modules",
        "platforms",
        "accounts",
    ):
        op.drop_table(table)
