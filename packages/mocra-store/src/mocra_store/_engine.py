"""The async engine for a store URL: the async driver, SQLite foreign keys on, one connection for :memory:."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import StaticPool

from ._urls import async_url, is_memory

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

__all__ = ("make_engine",)


def _foreign_keys_on(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def make_engine(url: str | URL | None) -> AsyncEngine:
    """An async engine for ``url`` (normalised by ``async_url``); SQLite enforces foreign keys (cascades).

    >>> make_engine("sqlite:///:memory:").url.drivername
    'sqlite+aiosqlite'
    """
    parsed = async_url(url if isinstance(url, str | None) else url.render_as_string(hide_password=False))
    options: dict[str, Any] = {"pool_pre_ping": True}  # a restarted server costs no failed call
    if is_memory(parsed):
        options["poolclass"] = StaticPool
    engine = create_async_engine(parsed, **options)
    if parsed.get_backend_name() == "sqlite":
        event.listen(engine.sync_engine, "connect", _foreign_keys_on)
    return engine
