"""The store's admin as core sees it: open, migrate and fill a store (`mocra store ...` uses this).

`mocra_store` is imported only inside these functions; its errors become mocra's: a store that does
not answer is `BackendUnavailable`, an un-migrated store or a bad tenants file is `ConfigError`.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

from .._errors import BackendUnavailable, ConfigError, redact
from .._lazy import require_extra

if TYPE_CHECKING:
    import pathlib
    from collections.abc import AsyncIterator, Mapping, Sequence
    from datetime import datetime
    from types import ModuleType

    from ._protocol import AssignmentRow

__all__ = (
    "RunRow",
    "StoreAdmin",
    "TenantRow",
    "open_store",
    "read_tenants",
    "store_revision",
    "upgrade_store",
)


class TenantRow(Protocol):
    """An account, platform or module as the store lists it (`version` for modules only)."""

    @property
    def kind(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def enabled(self) -> bool: ...
    @property
    def version(self) -> str | None: ...


class RunRow(Protocol):
    """One run's record: who ran what, how it ended and its stats."""

    @property
    def run_id(self) -> str: ...
    @property
    def module(self) -> str: ...
    @property
    def account(self) -> str | None: ...
    @property
    def platform(self) -> str | None: ...
    @property
    def worker(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def started_at(self) -> datetime: ...
    @property
    def finished_at(self) -> datetime | None: ...
    @property
    def stats(self) -> Mapping[str, Any]: ...
    @property
    def error(self) -> str | None: ...


class StoreAdmin(Protocol):
    """The admin methods of a `mocra_store.Store` that `mocra store ...` calls."""

    async def import_tenants(self, mapping: Mapping[str, Any], *, source: str = ...) -> dict[str, int]:
        """Upsert a tenants mapping; rows written per table."""
        ...

    async def export_tenants(self, *, secrets: bool = False) -> dict[str, Any]:
        """Everything as a tenants mapping (credentials only with `secrets`)."""
        ...

    async def set_enabled(self, kind: str, name: str, enabled: bool) -> None:
        """Switch an account, platform or module on or off."""
        ...

    async def accounts(self) -> Sequence[TenantRow]:
        """Every account."""
        ...

    async def platforms(self) -> Sequence[TenantRow]:
        """Every platform."""
        ...

    async def modules(self) -> Sequence[TenantRow]:
        """Every module."""
        ...

    async def assignments(self, *, include_disabled: bool = False) -> Sequence[AssignmentRow]:
        """The (account, platform, module) rows a run seeds, highest priority first."""
        ...

    async def runs(
        self, *, module: str | None = None, account: str | None = None, limit: int = 50
    ) -> Sequence[RunRow]:
        """The newest run records first."""
        ...


def _store_package(what: str) -> ModuleType:
    require_extra("mocra_store", "store", what)
    import mocra_store

    return mocra_store


def _translate(exc: Exception, url: str, store: ModuleType) -> NoReturn:
    """Raise the mocra error for a `mocra_store.StoreError` (the message keeps its redacted URL)."""
    text = str(exc)
    if isinstance(exc, store.StoreUnavailable):
        raise BackendUnavailable("store", url, text.partition(" is unavailable: ")[2] or text) from None
    if isinstance(exc, store.StoreNotMigrated):
        raise ConfigError("store.url", text, source="store") from None
    if isinstance(exc, store.TenantsFileError):
        raise ConfigError("tenants", text, source="store") from None
    if isinstance(exc, store.SecretKeyError):
        raise ConfigError(store.KEY_ENV, text, source="store") from None
    if isinstance(exc, store.NotFound):
        raise ConfigError(redact(url), text, source="store") from None
    raise ConfigError("store.url", f"{redact(url)}: {text}", source="store") from None


@asynccontextmanager
async def open_store(url: str, *, migrate: bool = False) -> AsyncIterator[StoreAdmin]:
    """The store at `url`, open in the block; `migrate=True` creates or upgrades its schema first.

    Errors of the store, on opening or inside the block, come out as mocra errors.

    Raises:
        MissingExtra: mocra-store is not installed (`mocra[store]`).
        BackendUnavailable: the store does not answer (naming it, password redacted).
        ConfigError: it is not migrated (naming `mocra store upgrade`), a tenants mapping is wrong,
            a name does not exist, or a password cannot be decrypted (`MOCRA_STORE_KEY`).

    Example:
        >>> import asyncio
        >>> async def names() -> list[str]:
        ...     async with open_store("sqlite:///:memory:", migrate=True) as store:
        ...         await store.import_tenants({"accounts": {"alice": {}, "bob": {}}})
        ...         return [a.name for a in await store.accounts()]
        >>> asyncio.run(names())
        ['alice', 'bob']
    """
    package = _store_package(f"a store ({redact(url)})")
    try:
        async with package.Store.open(url, migrate=migrate) as store:
            yield store
    except package.StoreError as exc:
        _translate(exc, url, package)


async def store_revision(url: str) -> tuple[str | None, str]:
    """The schema revision the store at `url` is at (None: none yet) and the one this mocra needs.

    Example:
        >>> import asyncio
        >>> asyncio.run(store_revision("sqlite:///:memory:"))
        (None, '0002')
    """
    package = _store_package(f"a store ({redact(url)})")
    from mocra_store import migrate

    try:
        found: str | None = await migrate.current_async(url)
    except package.StoreError as exc:
        _translate(exc, url, package)
    return found, migrate.head()


async def upgrade_store(url: str) -> str:
    """Create or upgrade the schema of the store at `url` to the newest; returns the revision it is at.

    Example:
        >>> import asyncio
        >>> asyncio.run(upgrade_store("sqlite:///:memory:"))
        '0002'
    """
    package = _store_package(f"a store ({redact(url)})")
    from mocra_store import migrate

    try:
        revision: str | None = await migrate.upgrade_async(url)
    except package.StoreError as exc:
        _translate(exc, url, package)
    return revision or "none"


def read_tenants(path: str | pathlib.Path) -> dict[str, Any]:
    """Read and check a tenants file (.toml, .json, .yaml); an error names the file and the key path.

    Raises:
        MissingExtra: mocra-store is not installed.
        ConfigError: the file cannot be read or is malformed.

    Example:
        >>> read_tenants("nowhere.toml")
        Traceback (most recent call last):
        ...
        mocra_core._errors.ConfigError: store: tenants: nowhere.toml: cannot read: No such file or directory
    """
    package = _store_package(f"a tenants file ({path})")
    try:
        data: dict[str, Any] = package.load_tenants(path)
    except package.StoreError as exc:
        _translate(exc, str(path), package)
    return data
