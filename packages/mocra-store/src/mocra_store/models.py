"""The tables: accounts x platforms x modules, their relations, middlewares, credentials, schedules, runs.

Relations carry ``enabled``, ``priority`` and ``config`` and cascade on delete. Run records keep names
as text so history survives deletes. Secrets are stored by the repository (encrypted when a key is set)
and never appear in a repr.

>>> sorted(Base.metadata.tables)[:3]
['account_platforms', 'accounts', 'credentials']
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    CheckConstraint,
    Double,
    ForeignKey,
    Index,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from ._types import UTCDateTime, utcnow

__all__ = (
    "Account",
    "AccountPlatform",
    "Base",
    "Credential",
    "Middleware",
    "Module",
    "ModuleAccount",
    "ModuleMiddleware",
    "ModulePlatform",
    "Platform",
    "RunRecord",
    "Schedule",
)

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
NAME = String(200)
RUN_STATUSES = ("running", "succeeded", "failed", "cancelled")
MIDDLEWARE_KINDS = ("download", "data")


class Base(DeclarativeBase):
    """The declarative base; ``Base.metadata`` is what the migrations are checked against."""

    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map = {dict[str, Any]: JSON, datetime: UTCDateTime}

    def __repr__(self) -> str:
        shown = {k: getattr(self, k) for k in ("id", "name", "run_id") if k in self.__mapper__.columns}
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in shown.items())})"


def _fk(table: str, *, nullable: bool = False) -> Mapped[Any]:
    return mapped_column(ForeignKey(f"{table}.id", ondelete="CASCADE"), nullable=nullable, index=True)


class _Named:
    """Columns of a named, switchable, configurable row."""

    id: Mapped[int] = mapped_column(primary_key=True, sort_order=-2)
    name: Mapped[str] = mapped_column(NAME, unique=True, sort_order=-1)
    enabled: Mapped[bool] = mapped_column(default=True)
    config: Mapped[dict[str, Any]] = mapped_column(default=dict)


class _Relation:
    """Columns every relation carries."""

    id: Mapped[int] = mapped_column(primary_key=True, sort_order=-1)
    enabled: Mapped[bool] = mapped_column(default=True)
    priority: Mapped[int] = mapped_column(default=0)
    config: Mapped[dict[str, Any]] = mapped_column(default=dict)


class Account(_Named, Base):
    """An account (a tenant) - who a run works for."""

    __tablename__ = "accounts"
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Platform(_Named, Base):
    """A platform - the site or API a run works on."""

    __tablename__ = "platforms"


class Module(_Named, Base):
    """A module - the code (spider) a run executes, with its version."""

    __tablename__ = "modules"
    version: Mapped[str] = mapped_column(String(50), default="")


class AccountPlatform(_Relation, Base):
    """The account works on the platform."""

    __tablename__ = "account_platforms"
    __table_args__ = (UniqueConstraint("account_id", "platform_id"),)
    account_id: Mapped[int] = _fk("accounts")
    platform_id: Mapped[int] = _fk("platforms")


class ModuleAccount(_Relation, Base):
    """The module runs for the account; its priority is the assignment's."""

    __tablename__ = "module_accounts"
    __table_args__ = (UniqueConstraint("module_id", "account_id"),)
    module_id: Mapped[int] = _fk("modules")
    account_id: Mapped[int] = _fk("accounts")


class ModulePlatform(_Relation, Base):
    """The module runs on the platform."""

    __tablename__ = "module_platforms"
    __table_args__ = (UniqueConstraint("module_id", "platform_id"),)
    module_id: Mapped[int] = _fk("modules")
    platform_id: Mapped[int] = _fk("platforms")


class Middleware(_Named, Base):
    """A middleware a module can use: ``kind`` is "download" or "data"."""

    __tablename__ = "middlewares"
    __table_args__ = (CheckConstraint("kind IN ('download', 'data')", name="kind"),)
    kind: Mapped[str] = mapped_column(String(16))


class ModuleMiddleware(Base):
    """The module uses the middleware at ``position`` (ascending)."""

    __tablename__ = "module_middlewares"
    __table_args__ = (UniqueConstraint("module_id", "middleware_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    module_id: Mapped[int] = _fk("modules")
    middleware_id: Mapped[int] = _fk("middlewares")
    position: Mapped[int] = mapped_column(default=0)
    enabled: Mapped[bool] = mapped_column(default=True)
    config: Mapped[dict[str, Any]] = mapped_column(default=dict)


class Credential(Base):
    """A login of an account, for one platform or (platform NULL) for any; ``secret`` is stored sealed."""

    __tablename__ = "credentials"
    __table_args__ = (
        UniqueConstraint("account_id", "platform_id"),
        Index(
            "uq_credentials_account_id_any_platform",
            "account_id",
            unique=True,
            sqlite_where=text("platform_id IS NULL"),
            postgresql_where=text("platform_id IS NULL"),
        ),
    )
    id: Mapped[int] = mapped_column(primary_key=True)
    account_id: Mapped[int] = _fk("accounts")
    platform_id: Mapped[int | None] = _fk("platforms", nullable=True)
    username: Mapped[str] = mapped_column(String(200), default="")
    secret: Mapped[str] = mapped_column(Text, default="")
    extra: Mapped[dict[str, Any]] = mapped_column(default=dict)


class Schedule(Base):
    """Run the module (for one account / on one platform, or all) on a cron expression."""

    __tablename__ = "schedules"
    id: Mapped[int] = mapped_column(primary_key=True)
    module_id: Mapped[int] = _fk("modules")
    account_id: Mapped[int | None] = _fk("accounts", nullable=True)
    platform_id: Mapped[int | None] = _fk("platforms", nullable=True)
    cron: Mapped[str] = mapped_column(String(200))
    misfire: Mapped[float] = mapped_column(Double, default=60.0)
    enabled: Mapped[bool] = mapped_column(default=True)


class RunRecord(Base):
    """One run's history; names are text so the record survives the tenants' deletion."""

    __tablename__ = "run_records"
    __table_args__ = (
        CheckConstraint("status IN ('running', 'succeeded', 'failed', 'cancelled')", name="status"),
    )
    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[str] = mapped_column(String(200), unique=True)
    account: Mapped[str | None] = mapped_column(NAME, index=True)
    platform: Mapped[str | None] = mapped_column(NAME)
    module: Mapped[str] = mapped_column(NAME, index=True)
    worker: Mapped[str] = mapped_column(String(200), default="")
    started_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)
    finished_at: Mapped[datetime | None] = mapped_column()
    status: Mapped[str] = mapped_column(String(16), default="running")
    stats: Mapped[dict[str, Any]] = mapped_column(default=dict)
    error: Mapped[str | None] = mapped_column(Text)
