"""`OriginServer`: a small HTTP/1.1 (or HTTPS) site on 127.0.0.1 for requests sent through a proxy."""

from __future__ import annotations

import contextlib
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import anyio
import anyio.abc
import anyio.from_thread
from anyio.streams.buffered import BufferedByteReceiveStream

from ._serve import in_thread, serving
from ._wire import read_head, response_bytes

if TYPE_CHECKING:
    import ssl
    from collections.abc import AsyncIterator, Mapping

    from anyio.abc import ByteStream

__all__ = ("OriginRequest", "OriginServer")


@dataclass(frozen=True)
class OriginRequest:
    """A request as the origin received it (after any proxy)."""

    method: str
    target: str
    headers: Mapping[str, str]


class OriginServer:
    """A site on 127.0.0.1 serving fixed pages, over plain HTTP or, with `ssl_context`, HTTPS.

    Keep-alive HTTP/1.1 with Content-Length bodies; a path not in `pages` gets 404. `requests` records
    what arrived, so a test can check what a proxy passed on (and what it did not, such as
    `Proxy-Authorization`).

    Args:
        pages: Path → body served with 200 (`text/plain; charset=utf-8` for `str`).
        ssl_context: A server-side TLS context to serve HTTPS (e.g. a self-signed certificate).

    Example:
        >>> import httpx
        >>> origin = OriginServer({"/a": "page a"})
        >>> with origin.run_in_thread() as site:
        ...     httpx.get(site + "/a").text, httpx.get(site + "/b").status_code
        ('page a', 404)
        >>> [r.target for r in origin.requests]
        ['/a', '/b']
    """

    def __init__(
        self, pages: Mapping[str, str | bytes], *, ssl_context: ssl.SSLContext | None = None
    ) -> None:
        self.pages = dict(pages)
        self.requests: list[OriginRequest] = []
        self.port = 0
        self._ssl_context = ssl_context

    @property
    def base_url(self) -> str:
        """`http(s)://127.0.0.1:PORT`, once the server listens."""
        if not self.port:
            raise RuntimeError("the origin is not listening yet")
        return f"{'https' if self._ssl_context else 'http'}://127.0.0.1:{self.port}"

    @asynccontextmanager
    async def running(self) -> AsyncIterator[str]:
        """Serve inside the current task group until the block exits; yields `base_url`."""
        async with serving(
            self._serve_connection, port=self.port, ssl_context=self._ssl_context
        ) as self.port:
            yield self.base_url

    def run_in_thread(self) -> contextlib.AbstractContextManager[str]:
        """Serve from a blocking portal's event-loop thread until the block exits; yields `base_url`."""
        return in_thread(self.running)

    async def _serve_connection(self, stream: ByteStream) -> None:
        rx = BufferedByteReceiveStream(stream)
        async with stream:
            with contextlib.suppress(
                anyio.BrokenResourceError, anyio.EndOfStream, anyio.IncompleteRead, ValueError
            ):
                while (head := await read_head(rx)) is not None:
                    length = int(head.get("content-length", "0") or 0)
                    if length:
                        await rx.receive_exactly(length)
                    method, target, _ = head.first
                    self.requests.append(
                        OriginRequest(method, target, {k.lower(): v for k, v in head.headers})
                    )
                    page = self.pages.get(urlsplit(target).path)
                    close = head.get("connection").lower() == "close"
                    if page is None:
                        await stream.send(response_bytes(404, b"not found", close=close))
                    else:
                        body = page.encode() if isinstance(page, str) else page
                        type_ = [("Content-Type", "text/plain; charset=utf-8")]
                        await stream.send(response_bytes(200, body, headers=type_, close=close))
                    if close:
                        return
