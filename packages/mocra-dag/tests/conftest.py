"""Shared fixtures: the anyio backend and the store implementations every conformance test runs on."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
import pytest

from mocra_dag import LmdbLeaseStore, LmdbRunStateStore, ManualClock, MemoryLeaseStore, MemoryRunStateStore

if TYPE_CHECKING:
    import pathlib
    from collections.abc import AsyncIterator, Awaitable, Callable

    from mocra_dag import LeaseStore, RunStateStore


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _until(condition: Callable[[], bool | Awaitable[bool]], limit: float = 5.0) -> None:
    with anyio.fail_after(limit):
        while True:
            value = condition()
            if not isinstance(value, bool):
                value = await value
            if value:
                return
            await anyio.sleep(0.001)


@pytest.fixture
def until() -> Callable[..., Awaitable[None]]:
    """`await until(condition)`: poll a (sync or async) condition until true; fail after 5 s."""
    return _until


class Stores:
    """Opens the stores of one backend; `reopen` simulates a process restart (a no-op in memory)."""

    def __init__(self, kind: str, path: pathlib.Path, clock: ManualClock) -> None:
        self.kind = kind
        self.path = path
        self.clock = clock
        self._opened: list[RunStateStore | LeaseStore] = []
        self._memory_state = MemoryRunStateStore()
        self._memory_leases = MemoryLeaseStore(clock=clock)

    @property
    def durable(self) -> bool:
        return self.kind == "lmdb"

    def state(self) -> RunStateStore:
        store: RunStateStore
        if self.kind == "memory":
            store = self._memory_state
        else:
            store = LmdbRunStateStore(self.path / "state", sync=False)
        self._opened.append(store)
        return store

    def leases(self) -> LeaseStore:
        store: LeaseStore
        if self.kind == "memory":
            store = self._memory_leases
        else:
            store = LmdbLeaseStore(self.path / "leases", clock=self.clock, sync=False)
        self._opened.append(store)
        return store

    async def close(self) -> None:
        for store in reversed(self._opened):
            await store.aclose()
        self._opened.clear()


@pytest.fixture(params=["memory", "lmdb"])
async def stores(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> AsyncIterator[Stores]:
    found = Stores(request.param, tmp_path, ManualClock(1_000.0))
    try:
        yield found
    finally:
        await found.close()
