"""Single-flight: concurrent computations of one idempotency key run once in a scheduler."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

__all__ = ("Flights",)


class _Flight:
    __slots__ = ("done", "ok", "value")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.ok = False
        self.value: Any = None


class Flights:
    """Deduplicates concurrent work by key within one process.

    The first caller of a key (the leader) computes; callers arriving while it runs wait and share its
    value. If the leader fails or is cancelled, one waiting caller becomes the next leader and computes
    itself (so each caller's own retry policy and error apply).

    Example:
        >>> import anyio
        >>> async def main():
        ...     flights, calls = Flights(), []
        ...     async def compute():
        ...         calls.append(1)
        ...         await anyio.sleep(0.01)
        ...         return "value"
        ...     results = []
        ...     async def call():
        ...         results.append(await flights.run("k", compute))
        ...     async with anyio.create_task_group() as tg:
        ...         for _ in range(3):
        ...             tg.start_soon(call)
        ...     return len(calls), sorted(results)
        >>> anyio.run(main)
        (1, [('value', False), ('value', True), ('value', True)])
    """

    __slots__ = ("_active",)

    def __init__(self) -> None:
        self._active: dict[str, _Flight] = {}

    async def run(self, key: str, compute: Callable[[], Awaitable[Any]]) -> tuple[Any, bool]:
        """Return `(value, shared)`: `shared` is True when another caller's computation was reused."""
        while (flight := self._active.get(key)) is not None:
            await flight.done.wait()
            if flight.ok:
                return flight.value, True
        flight = self._active[key] = _Flight()
        try:
            flight.value = await compute()
            flight.ok = True
            return flight.value, False
        finally:
            del self._active[key]
            flight.done.set()

    def __len__(self) -> int:
        return len(self._active)
