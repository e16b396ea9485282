"""`open_metadata`: the run's metadata source — its code, or a store (`[store] url`, `mocra[store]`).

`mocra_store` is imported only here, and only when a store URL is given.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from .._errors import BackendUnavailable, ConfigError, redact
from .._lazy import require_extra
from ._code import CodeSource

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable

    from ..modules import CompiledModule
    from ._protocol import MetadataSource, RunLog

__all__ = ("open_metadata",)


@asynccontextmanager
async def open_metadata(
    url: str | None, modules: Iterable[CompiledModule]
) -> AsyncIterator[tuple[MetadataSource, RunLog | None]]:
    """The source of the run's work and where its run records go, open in the block.

    Without `url`, the modules' code (`CodeSource`) and no run records; with one, a `mocra_store.Store`
    for both (its key for encrypted passwords from `MOCRA_STORE_KEY`).

    Raises:
        MissingExtra: `url` is given but mocra-store is not installed (`mocra[store]`).
        BackendUnavailable: the store does not answer (naming it, password redacted).
        ConfigError: the store is not migrated to this version (`store.url`: run `mocra store upgrade`),
            or another problem of the store.
    """
    if url is None:
        yield CodeSource(modules), None
        return
    require_extra("mocra_store", "store", f"a store ({redact(url)})")
    from mocra_store import Store, StoreError, StoreNotMigrated, StoreUnavailable

    try:
        store = Store(url)
        await store.connect()
    except StoreUnavailable as exc:
        raise BackendUnavailable("store", url, str(exc)) from None
    except StoreNotMigrated as exc:
        raise ConfigError("store.url", f"{exc}", source="store") from None
    except StoreError as exc:
        raise ConfigError("store.url", f"{redact(url)}: {exc}", source="store") from None
    try:
        yield store, store
    finally:
        await store.aclose()
