"""`Frontier`: where new requests enter the crawl — depth limit, dedup, then the request queue."""

from __future__ import annotations

import functools
import hashlib
import logging
from collections import defaultdict
from typing import TYPE_CHECKING

import anyio

from ..http import Routed
from ..topics import REQUESTS

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..dedup import SeenSet
    from ..http import Request, Routing
    from ..modules import CompiledModule
    from ..observe import Stats
    from ..queue import QueueBackend

__all__ = ("REQUESTS", "Frontier", "seen_key", "seen_scope")

logger = logging.getLogger(__name__)


class Frontier:
    """Admits requests into the request queue, each beside its routing (`Routed`).

    A request is dropped (and counted) when it is deeper than `max_depth` or its fingerprint was already
    seen in this job (unless `dont_filter`). The seen key is scoped: by module (two spiders in one run do
    not steal each other's pages), by account (each account sees its own pages), and by run for cron
    modules (each firing crawls afresh).
    """

    def __init__(
        self,
        queue: QueueBackend,
        seen: SeenSet | None,
        stats: Stats,
        *,
        max_depth: int | None = None,
    ) -> None:
        self._queue = queue
        self._seen = seen
        self._stats = stats
        self._max_depth = max_depth
        self._requeued: set[bytes] = set()  # seen keys this process queued past dedup (redelivered work)

    async def submit(
        self,
        requests: Sequence[Request],
        routing: Routing,
        *,
        scope: str = "",
        redelivered: bool = False,
        key: str | None = None,
    ) -> Sequence[Request]:
        """Publish the admissible `requests`, each beside `routing` (one, shared); returns those published.

        `scope` names the dedup namespace (the module; for a cron module, the module run). `redelivered`
        means the requests come from work that was handed out before (its worker died or timed out): they
        may already be in the seen set without having reached the queue (the worker died between the
        two), so they are queued even if seen — at least once, never lost — but once per process: several
        redelivered responses linking one URL queue it once (unless its publish failed: then the next
        attempt queues it). `key` is their queue partition key (account affinity), if any.
        """
        if not requests:
            return ()
        if self._max_depth is not None and routing.depth > self._max_depth:
            self._stats.drop("max_depth", len(requests))
            return ()
        requeued: list[bytes] = []  # seen keys queued again here, past dedup (redelivered work)
        if self._seen is not None:
            requests, requeued = await self._unseen(requests, scope, redelivered)
            if not requests:
                return ()
        try:
            await self._publish(requests, routing, key)
        except BaseException:  # maybe not queued: the next attempt queues them again
            self._requeued.difference_update(requeued)
            raise
        return requests

    async def _publish(self, requests: Sequence[Request], routing: Routing, key: str | None) -> None:
        priority = requests[0].priority
        if all(request.priority == priority for request in requests):  # the common case: one lane
            batch = [Routed(request, routing) for request in requests]
            await self._queue.publish(REQUESTS, batch, key=key, priority=priority)
            return
        by_priority: defaultdict[int, list[Routed]] = defaultdict(list)
        for request in requests:
            by_priority[request.priority].append(Routed(request, routing))
        try:  # lanes side by side: a broker round trip each, and a higher lane is often the crawl's spine
            async with anyio.create_task_group() as tg:
                for lane, lane_batch in by_priority.items():
                    publish = functools.partial(self._queue.publish, key=key, priority=lane)
                    tg.start_soon(publish, REQUESTS, lane_batch)
        except ExceptionGroup as group:  # callers tell outages from bugs by the exception's type
            raise group.exceptions[0] from None

    async def _unseen(
        self, requests: Sequence[Request], scope: str, redelivered: bool
    ) -> tuple[Sequence[Request], list[bytes]]:
        """`requests` less the duplicates (those seen before in `scope`, `dont_filter` ones never).

        Also the keys of the seen ones kept because the work is `redelivered` (noted in `_requeued`).
        """
        assert self._seen is not None
        checked = [r for r in requests if not r.dont_filter]
        if not checked:
            return requests, []
        keys = [seen_key(r.fingerprint, scope) for r in checked]
        fresh = await self._seen.add_if_absent(keys)
        if all(fresh):
            return requests, []
        duplicates = {id(r) for r, new in zip(checked, fresh, strict=True) if not new}
        requeued: list[bytes] = []
        if redelivered:
            again = [(r, k) for r, k, new in zip(checked, keys, fresh, strict=True) if not new]
            duplicates = {id(r) for r, k in again if k in self._requeued}
            requeued = [k for r, k in again if id(r) not in duplicates]
            self._requeued.update(requeued)
        if duplicates:
            self._stats.drop("duplicate", len(duplicates))
            return [r for r in requests if id(r) not in duplicates], requeued
        return requests, requeued


def seen_scope(module: CompiledModule, routing: Routing) -> str:
    """The dedup namespace of a request routed by `routing` (see `Frontier`): its module, account or cron run.

    Example:
        >>> from types import SimpleNamespace
        >>> from mocra_core.http import Routing
        >>> shop = SimpleNamespace(name="shop", schedules=())
        >>> news = SimpleNamespace(name="news", schedules=("@hourly",))
        >>> seen_scope(shop, Routing("shop/spider", account="alice"))  # type: ignore[arg-type]
        'shop:alice'
        >>> seen_scope(news, Routing("news/spider", run="cron1700000000"))  # type: ignore[arg-type]
        'news:cron1700000000'
    """
    if module.schedules:  # each scheduled run is a crawl of its own
        return f"{module.name}:{routing.run}"
    return module.name if routing.account is None else f"{module.name}:{routing.account}"


def seen_key(fingerprint: bytes, scope: str) -> bytes:
    """The key a request's `fingerprint` has in the seen set within `scope` (the set is shared by scopes)."""
    if not scope:
        return fingerprint
    hasher = _scope_hasher(scope).copy()  # a copy of the keyed state: the key block is not hashed again
    hasher.update(fingerprint)
    return hasher.digest()


@functools.lru_cache(maxsize=1024)
def _scope_hasher(scope: str) -> hashlib.blake2b:
    """A keyed blake2b of `scope`, nothing hashed yet: `copy()` it per key (never update it)."""
    return hashlib.blake2b(digest_size=16, key=hashlib.blake2b(scope.encode(), digest_size=32).digest())
