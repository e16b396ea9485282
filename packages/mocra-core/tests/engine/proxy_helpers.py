"""What the proxy crawl tests share: a spider that only fetches, running proxies, a port nobody listens on."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

from mocra_core import Ctx, Response, Spider
from mocra_proxy.testing import ForwardProxy


class Fetch(Spider[None]):
    """Fetches its start URLs and emits nothing."""

    name = "fetch"

    def __init__(self, *start: str) -> None:
        self.start_urls = start  # type: ignore[misc]

    async def parse(self, response: Response, ctx: Ctx[None]) -> None:
        return None


@asynccontextmanager
async def running(*proxies: ForwardProxy) -> AsyncIterator[list[str]]:
    """The proxies serving, their URLs in order."""
    async with AsyncExitStack() as stack:
        yield [await stack.enter_async_context(proxy.running()) for proxy in proxies]


def closed_port() -> int:
    """A port of 127.0.0.1 that was free a moment ago (a dead proxy's)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
