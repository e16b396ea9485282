"""``Store``: the async repository the engine reads its tenants, logins, schedules and run history from."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Self

from sqlalchemy import exc as sa_exc
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from . import _admin, _reads, _runs, _tenants_db
from ._engine import make_engine
from ._errors import StoreError, StoreUnavailable
from ._export import export_tenants
from ._secrets import Sealer, SecretKey
from ._urls import DEFAULT_URL, redact, unavailable_reason
from .migrate import check_revision, connect, revision_of

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping
    from types import TracebackType

    from sqlalchemy.engine import Connection
    from sqlalchemy.ext.asyncio import AsyncEngine

    from .records import Assignment, Credentials, RunEntry, ScheduleEntry, TenantInfo

__all__ = ("Store",)


def _upgrade_to_head(connection: Connection) -> str | None:
    from alembic import command

    from .migrate import alembic_config

    command.upgrade(alembic_config(connection), "head")
    return revision_of(connection)


class Store:
    """The tenants database, opened on ``url`` (default ``sqlite:///mocra.db``).

    Opening checks the database answers (``StoreUnavailable``) and is migrated to this package's head
    (``StoreNotMigrated``); ``migrate=True`` upgrades it instead. ``key`` (or ``MOCRA_STORE_KEY``)
    encrypts passwords at rest.

    >>> import asyncio
    >>> async def main() -> list[str]:
    ...     async with Store.open("sqlite:///:memory:", migrate=True) as store:
    ...         await store.import_tenants(
    ...             {
    ...                 "platforms": {"shop": {}},
    ...                 "modules": {"prices": {"version": "2"}},
    ...                 "accounts": {"alice": {}},
    ...                 "relations": [
    ...                     {"account": "alice", "platform": "shop"},
    ...                     {"module": "prices", "account": "alice"},
    ...                     {"module": "prices", "platform": "shop"},
    ...                 ],
    ...             }
    ...         )
    ...         return [f"{a.account}/{a.platform}/{a.module}" for a in await store.assignments()]
    >>> asyncio.run(main())
    ['alice/shop/prices']
    """

    def __init__(
        self, url: str | None = None, *, key: SecretKey | None = None, migrate: bool = False
    ) -> None:
        self._url = url or DEFAULT_URL
        self._sealer = Sealer(key)
        self._migrate = migrate
        self._engine: AsyncEngine | None = None
        self._sessions: async_sessionmaker[AsyncSession] | None = None

    @classmethod
    @asynccontextmanager
    async def open(
        cls, url: str | None = None, *, key: SecretKey | None = None, migrate: bool = False
    ) -> AsyncIterator[Self]:
        """Open a store for the ``async with`` block and close it after."""
        store = cls(url, key=key, migrate=migrate)
        await store.connect()
        try:
            yield store
        finally:
            await store.aclose()

    @property
    def url(self) -> str:
        """The database URL with its password redacted (safe to log)."""
        return redact(self._url)

    def __repr__(self) -> str:
        state = "open" if self._engine is not None else "closed"
        return f"Store({redact(self._url)!r}, {state}, encrypting={self._sealer.encrypting})"

    async def connect(self) -> None:
        """Connect, and check (or with ``migrate=True`` bring) the schema at head."""
        if self._engine is not None:
            return
        engine = make_engine(self._url)
        try:
            async with connect(engine, self._url) as connection:
                work = _upgrade_to_head if self._migrate else revision_of
                check_revision(await connection.run_sync(work), self._url)
        except BaseException:
            await engine.dispose()
            raise
        self._engine = engine
        self._sessions = async_sessionmaker(engine, expire_on_commit=False)

    async def aclose(self) -> None:
        """Close the connections; the store can be connected again."""
        engine, self._engine, self._sessions = self._engine, None, None
        if engine is not None:
            await engine.dispose()

    async def __aenter__(self) -> Self:
        await self.connect()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def _gone(self, exc: sa_exc.DBAPIError | OSError) -> StoreUnavailable:
        reason = unavailable_reason(exc, self._url)
        return StoreUnavailable(f"the store at {redact(self._url)} is unavailable: {reason}")

    @asynccontextmanager
    async def _session(self) -> AsyncIterator[AsyncSession]:
        """A session in a transaction; losing the server (at checkout or mid-call) is StoreUnavailable."""
        if self._sessions is None:
            raise StoreError(f"{self!r} is not open: use `async with Store.open(...)` or await connect()")
        try:
            async with self._sessions.begin() as session:
                try:
                    await session.connection()  # checkout (pre-pinged): a failure here is the server
                except (sa_exc.DBAPIError, OSError) as exc:
                    raise self._gone(exc) from None
                yield session
        except sa_exc.DBAPIError as exc:
            if exc.connection_invalidated:
                raise self._gone(exc) from None
            raise

    # ----------------------------------------------------------------- what the engine reads
    async def assignments(self, *, include_disabled: bool = False) -> list[Assignment]:
        """Every (account, platform, module) the three relations join, highest priority first.

        Config merges platform < module < account < account×platform < module×platform < module×account.
        Disabled triples (``disabled_by`` names why) are listed only with ``include_disabled``.
        """
        async with self._session() as session:
            return await _reads.read_assignments(session, include_disabled=include_disabled)

    async def credentials(self, account: str, platform: str | None = None) -> Credentials | None:
        """The decrypted login of ``account`` on ``platform`` (else its any-platform login), or None."""
        async with self._session() as session:
            return await _reads.read_credentials(session, self._sealer, account, platform)

    async def schedules(self) -> list[ScheduleEntry]:
        """The enabled schedules."""
        async with self._session() as session:
            return await _reads.read_schedules(session)

    # ----------------------------------------------------------------- run history
    async def run_started(
        self, run_id: str, *, account: str | None, platform: str | None, module: str, worker: str
    ) -> None:
        """Record that a run started (status "running")."""
        async with self._session() as session:
            await _runs.start_run(
                session, run_id, account=account, platform=platform, module=module, worker=worker
            )

    async def run_finished(
        self, run_id: str, *, status: str, stats: Mapping[str, Any], error: str | None = None
    ) -> None:
        """Record how a run ended: "succeeded", "failed" or "cancelled", with its stats and error."""
        async with self._session() as session:
            await _runs.finish_run(session, run_id, status=status, stats=stats, error=error)

    async def runs(
        self, *, module: str | None = None, account: str | None = None, limit: int = 50
    ) -> list[RunEntry]:
        """The newest runs first, optionally of one module and/or account."""
        async with self._session() as session:
            return await _runs.list_runs(session, module=module, account=account, limit=limit)

    # ----------------------------------------------------------------- admin
    async def import_tenants(
        self, mapping: Mapping[str, Any], *, source: str = "<tenants>"
    ) -> dict[str, int]:
        """Upsert a tenants mapping (see ``load_tenants``) in one transaction; rows written per table."""
        async with self._session() as session:
            return await _tenants_db.import_tenants(session, self._sealer, mapping, source=source)

    async def export_tenants(self, *, secrets: bool = False) -> dict[str, Any]:
        """Everything as a tenants mapping; credentials (decrypted) only with ``secrets=True``."""
        async with self._session() as session:
            return await export_tenants(session, self._sealer, secrets=secrets)

    async def set_enabled(self, kind: str, name: str, enabled: bool) -> None:
        """Switch an "account", "platform" or "module" on or off (``NotFound`` if there is none)."""
        async with self._session() as session:
            await _admin.set_enabled(session, kind, name, enabled)

    async def delete(self, kind: str, name: str) -> None:
        """Delete an "account", "platform" or "module" with its relations, logins and schedules."""
        async with self._session() as session:
            await _admin.delete_named(session, kind, name)

    async def accounts(self) -> list[TenantInfo]:
        """Every account, by name."""
        async with self._session() as session:
            return await _admin.list_named(session, "account")

    async def platforms(self) -> list[TenantInfo]:
        """Every platform, by name."""
        async with self._session() as session:
            return await _admin.list_named(session, "platform")

    async def modules(self) -> list[TenantInfo]:
        """Every module, by name."""
        async with self._session() as session:
            return await _admin.list_named(session, "module")

    async def set_credentials(
        self,
        account: str,
        platform: str | None,
        *,
        username: str,
        password: str,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        """Create or replace a login (``platform=None``: for any platform); the password is sealed."""
        async with self._session() as session:
            await _admin.set_login(
                session, self._sealer, account, platform, username=username, password=password, extra=extra
            )

    async def reseal_secrets(self) -> int:
        """Encrypt every stored password again with the first key (after rotating keys); returns how many."""
        async with self._session() as session:
            return await _admin.reseal(session, self._sealer)
