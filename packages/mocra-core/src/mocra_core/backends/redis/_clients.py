"""`RedisClients`: the Redis clients of one run, one per server, shared by the stores on it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ("RedisClients",)


class RedisClients:
    """One client (one connection pool) per Redis URL, for a run's coordination store, seen set and gate.

    The three send commands that must not be retried, so one client fits them all; sharing it saves each
    worker two connection pools per server. The queue keeps a client of its own: it retries commands on a
    stale connection and blocks connections on its bell. Importing this module does not import `redis`
    (the base install opens an empty one); `get` does.

    Example:
        >>> import anyio
        >>> async def main() -> bool:
        ...     clients = RedisClients()
        ...     same = clients.get("redis://127.0.0.1:6379/0") is clients.get("redis://127.0.0.1:6379/0")
        ...     await clients.aclose()
        ...     return same
        >>> anyio.run(main)
        True
    """

    __slots__ = ("_clients",)

    def __init__(self) -> None:
        self._clients: dict[str, Redis] = {}

    def get(self, url: str) -> Redis:
        """The run's client of `url`, made on first use (see `connect_redis`; it connects on first command).

        Raises:
            BackendError: `url` cannot be parsed.
        """
        client = self._clients.get(url)
        if client is None:
            from ._connection import connect_redis

            client = self._clients[url] = connect_redis(url)
        return client

    async def aclose(self) -> None:
        """Close every client (after the stores using them are closed)."""
        clients, self._clients = list(self._clients.values()), {}
        with anyio.CancelScope(shield=True):
            for client in clients:
                await client.aclose()
