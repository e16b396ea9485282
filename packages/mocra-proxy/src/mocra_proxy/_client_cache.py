"""`ClientCache`: one `httpx.AsyncClient` per proxy, least recently used closed first."""

from __future__ import annotations

from collections import OrderedDict
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
import httpx

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping

    from ._proxy import Proxy

__all__ = ("ClientCache",)


class ClientCache:
    """Keeps at most `size` clients, one per proxy, made with `client_kwargs` plus `proxy=`.

    Making a client costs tens of milliseconds (an SSL context), so a client is kept for its proxy's
    next request. When a new proxy needs room, the least recently used client is closed, at once if no
    request is using it, else when its last request ends.
    """

    def __init__(self, size: int, client_kwargs: Mapping[str, Any]) -> None:
        if size < 1:
            raise ValueError(f"max_clients must be at least 1, got {size!r}")
        self._size = size
        self._kwargs = dict(client_kwargs)
        self._clients: OrderedDict[str, httpx.AsyncClient] = OrderedDict()
        self._in_use: dict[httpx.AsyncClient, int] = {}
        self._retired: set[httpx.AsyncClient] = set()
        self.opened = 0
        """How many clients were made (a client per request would make this the request count)."""

    @asynccontextmanager
    async def client(self, proxy: Proxy) -> AsyncIterator[httpx.AsyncClient]:
        """The client for `proxy`, held for the block."""
        key = proxy.url  # the password is part of the key: a new password means a new client
        client = self._clients.get(key)
        if client is None:
            client = httpx.AsyncClient(proxy=key, **self._kwargs)
            self.opened += 1
            self._clients[key] = client
            while len(self._clients) > self._size:
                _, old = self._clients.popitem(last=False)
                await self._retire(old)
        else:
            self._clients.move_to_end(key)
        self._in_use[client] = self._in_use.get(client, 0) + 1
        try:
            yield client
        finally:
            left = self._in_use[client] - 1
            if left:
                self._in_use[client] = left
            else:
                del self._in_use[client]
                if client in self._retired:
                    self._retired.discard(client)
                    with anyio.CancelScope(shield=True):
                        await client.aclose()

    def __len__(self) -> int:
        return len(self._clients)

    async def _retire(self, client: httpx.AsyncClient) -> None:
        if client in self._in_use:
            self._retired.add(client)
        else:
            await client.aclose()

    async def aclose(self) -> None:
        """Close every client (those still in use too: their requests fail)."""
        clients = [*self._clients.values(), *self._retired]
        self._clients.clear()
        self._retired.clear()
        for client in clients:
            await client.aclose()
