"""Schema migrations: Alembic revisions shipped in the package, run on the async engine via ``run_sync``.

>>> head()
'0002'
>>> upgrade("sqlite:///:memory:")  # each call opens its own engine; a file or server keeps the result
'0002'
"""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import exc as sa_exc

from ._engine import make_engine
from ._errors import StoreError, StoreNotMigrated, StoreUnavailable
from ._urls import redact, unavailable_reason

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Coroutine

    from sqlalchemy.engine import URL, Connection
    from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

__all__ = (
    "SCRIPT_LOCATION",
    "UPGRADE_COMMAND",
    "check_revision",
    "connect",
    "current",
    "current_async",
    "downgrade",
    "downgrade_async",
    "head",
    "revision_of",
    "revisions",
    "upgrade",
    "upgrade_async",
)

SCRIPT_LOCATION = "mocra_store:migrations"
UPGRADE_COMMAND = "`mocra store upgrade` (or `python -m mocra_store upgrade URL`)"
_T = TypeVar("_T")


def alembic_config(connection: Connection | None = None) -> Config:
    """An Alembic config for the shipped revisions; ``connection`` is handed to ``env.py``."""
    config = Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def head() -> str:
    """The newest revision this mocra-store ships."""
    found = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert found is not None
    return found


def revisions() -> list[str]:
    """Every shipped revision, oldest first.

    >>> revisions()
    ['0001', '0002']
    """
    scripts = ScriptDirectory.from_config(alembic_config())
    return [script.revision for script in reversed(list(scripts.walk_revisions()))]


def revision_of(connection: Connection) -> str | None:
    """The revision the database behind a (sync) connection is at; None for an empty database."""
    return MigrationContext.configure(connection).get_current_revision()


def check_revision(found: str | None, url: str | None) -> None:
    """Raise ``StoreNotMigrated`` unless ``found`` is this package's head."""
    needed = head()
    if found == needed:
        return
    where = f"the database at {redact(url)}"
    if found is not None and found not in revisions():
        raise StoreNotMigrated(
            f"{where} is at revision {found}, newer than this mocra-store knows (head {needed}):"
            " upgrade mocra-store"
        )
    at = f"at revision {found}" if found else "not initialised (no revision)"
    raise StoreNotMigrated(f"{where} is {at}, this mocra-store needs {needed}: run {UPGRADE_COMMAND}")


def _open_sqlite_file(path: str) -> None:
    sqlite3.connect(path).close()


async def _probe_sqlite_file(url: URL) -> None:
    """Open a SQLite file with the stdlib first.

    aiosqlite's own failed connect leaves a worker thread that may report to an already closed loop.
    """
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:") and not url.query:
        await asyncio.to_thread(_open_sqlite_file, url.database)


@asynccontextmanager
async def connect(engine: AsyncEngine, url: str | None) -> AsyncIterator[AsyncConnection]:
    """A connection in a transaction; failing to connect raises ``StoreUnavailable`` (URL redacted)."""
    try:
        await _probe_sqlite_file(engine.url)
        connection = await engine.connect()
    except (sa_exc.DBAPIError, sqlite3.Error, OSError) as exc:
        reason = unavailable_reason(exc, engine.url)
        raise StoreUnavailable(f"the store at {redact(url)} is unavailable: {reason}") from None
    try:
        async with connection.begin():
            yield connection
    finally:
        await connection.close()


async def _on_engine(url: str | None, work: Any, *args: Any) -> Any:
    engine = make_engine(url)
    try:
        async with connect(engine, url) as connection:
            return await connection.run_sync(work, *args)
    finally:
        await engine.dispose()


def _upgrade_on(connection: Connection, revision: str) -> str | None:
    command.upgrade(alembic_config(connection), revision)
    return revision_of(connection)


def _downgrade_on(connection: Connection, revision: str) -> str | None:
    command.downgrade(alembic_config(connection), revision)
    return revision_of(connection)


async def upgrade_async(url: str | None = None, revision: str = "head") -> str | None:
    """Upgrade the database at ``url`` to ``revision``; returns the revision it is now at."""
    result: str | None = await _on_engine(url, _upgrade_on, revision)
    return result


async def downgrade_async(url: str | None, revision: str) -> str | None:
    """Downgrade the database at ``url`` to ``revision`` ("base" empties it); returns the revision."""
    result: str | None = await _on_engine(url, _downgrade_on, revision)
    return result


async def current_async(url: str | None = None) -> str | None:
    """The revision the database at ``url`` is at; None when it has none."""
    result: str | None = await _on_engine(url, revision_of)
    return result


def _run(work: Coroutine[Any, Any, _T]) -> _T:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(work)
    work.close()
    raise StoreError("called inside an event loop: await the *_async variant instead")


def upgrade(url: str | None = None, revision: str = "head") -> str | None:
    """Blocking ``upgrade_async``, for scripts and command lines."""
    return _run(upgrade_async(url, revision))


def downgrade(url: str | None, revision: str) -> str | None:
    """Blocking ``downgrade_async``."""
    return _run(downgrade_async(url, revision))


def current(url: str | None = None) -> str | None:
    """Blocking ``current_async``."""
    return _run(current_async(url))
