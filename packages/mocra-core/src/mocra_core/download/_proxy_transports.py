"""`ProxyTransports`: one pooled transport per proxy URL, the least recently used closed past a cap.

An httpx transport talks to one proxy, so a downloader keeps a transport per proxy it sends through.
A transport pushed out of the cache while requests still use it is closed when the last of them ends.
"""

from __future__ import annotations

from collections import OrderedDict
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from ._transport import build_transport

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    import httpx

    from ._settings import DownloadSettings

__all__ = ("ProxyTransports",)


class _Held:
    __slots__ = ("retired", "transport", "users")

    def __init__(self, transport: httpx.AsyncBaseTransport) -> None:
        self.transport = transport
        self.users = 0
        self.retired = False


class ProxyTransports:
    """Transports by proxy URL, at most `capacity` kept open (least recently used closed first).

    Args:
        settings: Built with `build_transport(settings, proxy=url)`.
        capacity: Transports kept open at once (at least 1).
    """

    def __init__(self, settings: DownloadSettings, *, capacity: int = 32) -> None:
        self._settings = settings
        self._capacity = max(1, capacity)
        self._open: OrderedDict[str, _Held] = OrderedDict()
        self._retired: list[_Held] = []

    def __len__(self) -> int:
        return len(self._open)

    @asynccontextmanager
    async def using(self, url: str) -> AsyncIterator[httpx.AsyncBaseTransport]:
        """The transport of proxy `url` (made on first use), held open until the block ends."""
        held = self._open.get(url)
        if held is None:
            held = self._open[url] = _Held(build_transport(self._settings, proxy=url))
            await self._trim()
        else:
            self._open.move_to_end(url)
        held.users += 1
        try:
            yield held.transport
        finally:
            held.users -= 1
            if held.retired and held.users == 0:
                self._retired.remove(held)
                await held.transport.aclose()

    async def aclose(self) -> None:
        """Close every transport, those still in use included."""
        held = [*self._open.values(), *self._retired]
        self._open.clear()
        self._retired.clear()
        for one in held:
            await one.transport.aclose()

    async def _trim(self) -> None:
        while len(self._open) > self._capacity:
            _, oldest = self._open.popitem(last=False)
            if oldest.users:
                oldest.retired = True
                self._retired.append(oldest)
            else:
                await oldest.transport.aclose()
