"""Fixtures for the download tests: every built-in downloader, a fake clock, a closed port, gzip bombs.

The downloader tests are a conformance suite: `transport` runs each of them against every value of
`DownloadSettings.transport` (`AiohttpDownloader`, and `HttpxDownloader` over aiohttp and over httpcore).
"""

from __future__ import annotations

import socket
import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import anyio.lowlevel
import pytest

from mocra_core.download import (
    AiohttpDownloader,
    DownloadSettings,
    HttpxDownloader,
    ProxyRoute,
    build_downloader,
)
from mocra_core.download._settings import TRANSPORTS


@pytest.fixture(params=TRANSPORTS)
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


BuiltIn = AiohttpDownloader | HttpxDownloader
MakeDownloader = Callable[..., BuiltIn]


@pytest.fixture
async def make_downloader(transport: str) -> AsyncIterator[MakeDownloader]:
    """`make_downloader(**settings)`: the built-in downloader of the parametrised transport, closed after."""
    made: list[BuiltIn] = []

    def make(*, proxies: ProxyRoute | None = None, **settings: Any) -> BuiltIn:
        downloader = build_downloader(DownloadSettings(transport=transport, **settings), proxies=proxies)  # type: ignore[arg-type]
        made.append(downloader)
        return downloader

    yield make
    for downloader in made:
        await downloader.aclose()


class FakeClock:
    """A monotonic clock that only moves when something sleeps on it."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds
        await anyio.lowlevel.checkpoint()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A local port nobody listens on (connections are refused at once)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    yield port


@pytest.fixture
def gzip_bomb() -> Callable[[int], bytes]:
    return make_gzip_bomb


def make_gzip_bomb(size: int) -> bytes:
    """A gzip stream of `size` zero bytes (a multiple of 1 MiB), built in ~1 ms whatever the size.

    Full flushes make every 1 MiB block compress to the same bytes, so the block is repeated instead of
    compressing `size` bytes. The trailer is left off: a reader that respects the size cap never gets there.
    """
    mib = bytes(1 << 20)
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    head = compressor.compress(mib) + compressor.flush(zlib.Z_FULL_FLUSH)
    block = compressor.compress(mib) + compressor.flush(zlib.Z_FULL_FLUSH)
    return head + block * (size // len(mib) - 1)
