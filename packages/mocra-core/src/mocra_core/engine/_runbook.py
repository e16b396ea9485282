"""`RunBook`: per-run shared state — stop signals, gates, fan-in bookkeeping — kept in `Coordination`.

Everything here goes through the coordination store, so it holds for every worker of a job once the
store is shared (LMDB on one host; Raft or a broker's KV across hosts), not per process.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..coordination import Coordination

__all__ = ("RunBook",)

_ENCODE = msgspec.msgpack.Encoder()
_DECODE_META = msgspec.msgpack.Decoder(dict[str, Any])


class RunBook:
    """Stop signals, gates and fan-in bookkeeping of module runs.

    Keys per run: `stop:{run}`, `gate:{run}:{a}>{b}`, `fallback:{run}:{key}`, `open:{run}:{node}`,
    `closed:{run}:{node}`, `settled:{run}:{node}:{count}`, `fanin:{run}:{node}` and `inputs:{run}:{node}`.

    Fan-in bookkeeping: `open:` counts the units of a node queued (only ever raised), `closed:` lists the
    claims of the units closed; a node is done when its distinct claims reach its opened count. A run
    started by a version before this one holds in `open:` the units opened minus those closed until then,
    so it carries on: units closed since are counted against what was still open.

    Stop signals are cached once seen (a stopped run never restarts), and a run found live is not asked
    about again for `recheck` seconds: checking costs one store read per run and interval (a round trip
    on a shared store), not one per request. A stop from another worker is seen within `recheck`.
    """

    def __init__(self, coordination: Coordination, *, recheck: float = 0.5) -> None:
        self._store = coordination
        self._stopped: set[str] = set()
        self._live_until: dict[str, float] = {}
        self._recheck = recheck

    async def is_stopped(self, run: str | None) -> bool:
        """True when `run` was stopped by one of its nodes."""
        if run is None:
            return False
        if run in self._stopped:
            return True
        now = time.monotonic()
        if self._live_until.get(run, 0.0) > now:
            return False
        if await self._store.get(f"stop:{run}") is not None:
            self._stopped.add(run)
            return True
        self._live_until[run] = now + self._recheck
        return False

    async def stop(self, run: str | None, reason: str) -> None:
        """Stop `run`: work of it not started yet becomes a no-op."""
        if run is not None:
            self._stopped.add(run)
            await self._store.set_if_absent(f"stop:{run}", reason.encode())

    async def advance_once(self, run: str | None, node: str, successor: str) -> bool:
        """The advance gate: True the first time `node` → `successor` is passed in `run`."""
        return await self._store.set_if_absent(f"gate:{run}:{node}>{successor}")

    async def fallback_once(self, run: str | None, key: str) -> bool:
        """The fallback gate: True the first time the predecessor of `key` is re-injected in `run`."""
        return await self._store.set_if_absent(f"fallback:{run}:{key}")

    async def opened(self, run: str, node: str, count: int) -> None:
        """`count` units of work (tasks, requests, responses) of `node` were queued in `run`."""
        await self._store.incr(f"open:{run}:{node}", count)

    async def closed(self, run: str, node: str, claim: str) -> bool:
        """Close the unit `claim` of `node` in `run`; True when every unit of `node` opened so far is closed.

        One atomic append of `claim` (the message's `topic/id`, stable across its redeliveries) to
        `closed:{run}:{node}`: closing a unit again — a stale claim and its successor, or a redelivery
        after a crash before the ack — adds no unit, since units are counted by their distinct claims.
        The list is read only once its length reaches the opened count (the cheap path is one more
        read); the first closer that finds the node complete leaves `settled:{run}:{node}:{opened}`,
        which `all_closed` reads instead of the list.

        Example:
            >>> import anyio
            >>> from mocra_core.coordination import LocalCoordination
            >>> async def main():
            ...     book = RunBook(LocalCoordination())
            ...     await book.opened("r1", "page", 2)
            ...     first = await book.closed("r1", "page", "request/1")
            ...     again = await book.closed("r1", "page", "request/1")  # the same unit, closed twice
            ...     last = await book.closed("r1", "page", "request/2")
            ...     return first, again, last, await book.all_closed("r1", ["page"])
            >>> anyio.run(main)
            (False, False, True, True)
        """
        length = await self._store.append(f"closed:{run}:{node}", claim.encode())
        opened = await self._store.incr(f"open:{run}:{node}", 0)
        if opened <= 0:
            return True
        if length < opened:
            return False
        mark = f"settled:{run}:{node}:{opened}"
        if await self._store.get(mark) is not None:
            return True
        if len(set(await self._store.items(f"closed:{run}:{node}"))) < opened:
            return False
        await self._store.set_if_absent(mark)
        return True

    async def all_closed(self, run: str, nodes: Iterable[str]) -> bool:
        """True when every unit opened of each of `nodes` in `run` was found closed by `closed`."""
        for node in nodes:
            opened = await self._store.incr(f"open:{run}:{node}", 0)
            if opened > 0 and await self._store.get(f"settled:{run}:{node}:{opened}") is None:
                return False
        return True

    async def fire_fan_in_once(self, run: str, node: str) -> bool:
        """True the first time the fan-in node `node` fires in `run`."""
        return await self._store.set_if_absent(f"fanin:{run}:{node}")

    async def gather(self, run: str, node: str, meta: dict[str, Any]) -> None:
        """Keep `meta` as an input of the fan-in node `node` in `run`."""
        await self._store.append(f"inputs:{run}:{node}", _ENCODE.encode(meta))

    async def inputs(self, run: str, node: str) -> list[dict[str, Any]]:
        """Everything gathered for the fan-in node `node` in `run`, in arrival order."""
        return [_DECODE_META.decode(raw) for raw in await self._store.items(f"inputs:{run}:{node}")]
