"""`ForwardProxy`: a real HTTP forward proxy on 127.0.0.1 for tests, with programmable failures."""

from __future__ import annotations

import base64
import contextlib
import logging
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal
from urllib.parse import quote, urlsplit

import anyio
import anyio.abc
import anyio.from_thread
from anyio.streams.buffered import BufferedByteReceiveStream

from ._serve import in_thread, serving
from ._wire import HOP_BY_HOP, Head, head_bytes, pipe, read_head, response_bytes, splice

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from anyio.abc import SocketStream

__all__ = ("ForwardProxy", "Mode", "Seen")

logger = logging.getLogger(__name__)

Mode = Literal["forward", "forbid", "drop"]
_CONNECT_TIMEOUT = 10.0
_MAX_BODY_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class Seen:
    """One request the proxy received.

    Attributes:
        at: `time.monotonic()` when its head arrived (before any `delay`).
        method: `GET`, `CONNECT`, ...
        target: The absolute URL, or `host:port` for `CONNECT`.
        authorized: It passed the proxy's login (always true when the proxy needs none).
        status: What the proxy answered: the origin's status, 200 for an open tunnel, 403, 407 or 502;
            0 when the proxy closed the connection without an answer (`mode="drop"`).
    """

    at: float
    method: str
    target: str
    authorized: bool
    status: int


class ForwardProxy:
    """An HTTP/1.1 forward proxy bound to 127.0.0.1: absolute-form requests and `CONNECT` tunnels.

    Every connection carries one request and is closed after it (`Connection: close`). Behaviour can be
    changed while it runs: `mode="forbid"` answers 403 to everything, `mode="drop"` closes each
    connection without an answer (a dead proxy), `forbid_after=N` serves N requests and forbids the
    rest, `delay` waits before forwarding. After the proxy stops, its `url` refuses connections (a
    closed port). `seen` records every request with a monotonic timestamp, so tests can measure rates
    from the proxy's side.

    Args:
        username: When set, requests must carry `Proxy-Authorization: Basic ...` with these
            credentials; the others get 407.
        password: The password that goes with `username`.
        mode: `forward` (default), `forbid` or `drop`.
        forbid_after: Serve this many requests, then answer 403 (`None`: never).
        delay: Seconds to wait before forwarding each request.

    Example:
        >>> import httpx
        >>> from mocra_proxy.testing import OriginServer
        >>> origin, proxy = OriginServer({"/": "hello"}), ForwardProxy(username="u", password="p")
        >>> with origin.run_in_thread() as site, proxy.run_in_thread() as proxy_url:
        ...     httpx.get(site + "/", proxy=proxy_url).text
        'hello'
        >>> [(s.method, s.authorized, s.status) for s in proxy.seen]
        [('GET', True, 200)]
    """

    def __init__(
        self,
        *,
        username: str | None = None,
        password: str = "",
        mode: Mode = "forward",
        forbid_after: int | None = None,
        delay: float = 0.0,
    ) -> None:
        self.mode: Mode = mode
        self.forbid_after = forbid_after
        self.delay = delay
        self.seen: list[Seen] = []
        self.served = 0
        self.port = 0
        self._username = username
        self._password = password
        self._expected = (
            None
            if username is None
            else "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode("ascii")
        )

    @property
    def address(self) -> str:
        """`127.0.0.1:PORT`, once the proxy has listened."""
        if not self.port:
            raise RuntimeError("the proxy has not listened yet")
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """`http://[user:pass@]127.0.0.1:PORT`: the URL to give an HTTP client (credentials included)."""
        if self._username is None:
            return f"http://{self.address}"
        return f"http://{quote(self._username, safe='')}:{quote(self._password, safe='')}@{self.address}"

    @asynccontextmanager
    async def running(self) -> AsyncIterator[str]:
        """Serve inside the current task group until the block exits; yields `url`."""
        async with serving(self._serve_connection, port=self.port) as self.port:
            yield self.url

    def run_in_thread(self) -> contextlib.AbstractContextManager[str]:
        """Serve from a blocking portal's event-loop thread until the block exits; yields `url`."""
        return in_thread(self.running)

    async def _serve_connection(self, client: SocketStream) -> None:
        rx = BufferedByteReceiveStream(client)
        async with client:
            with contextlib.suppress(anyio.BrokenResourceError, anyio.EndOfStream, anyio.IncompleteRead):
                try:
                    head = await read_head(rx)
                except (ValueError, anyio.DelimiterNotFound):
                    await client.send(response_bytes(400, b"bad request", close=True))
                    return
                if head is not None:
                    await self._handle(head, client, rx)

    async def _handle(self, head: Head, client: SocketStream, rx: BufferedByteReceiveStream) -> None:
        at = time.monotonic()
        method, target, _ = head.first
        authorized = self._expected is None or head.get("proxy-authorization") == self._expected
        logger.debug("proxy %s: %s %s", self.address, method, target)
        if self.mode == "drop":
            self._record(at, head, authorized, 0)
            return
        refusal = self._refusal(authorized)
        if refusal:
            await _drain_body(head, rx)
            headers = [("Proxy-Authenticate", 'Basic realm="mocra-test"')] if refusal == 407 else []
            await client.send(
                response_bytes(refusal, b"refused by the test proxy", headers=headers, close=True)
            )
            self._record(at, head, authorized, refusal)
            return
        self.served += 1
        if self.delay:
            await anyio.sleep(self.delay)
        if method == "CONNECT":
            await self._tunnel(at, head, client, rx)
        else:
            await self._forward(at, head, client, rx)

    def _refusal(self, authorized: bool) -> int:
        if not authorized:
            return 407
        if self.mode == "forbid" or (self.forbid_after is not None and self.served >= self.forbid_after):
            return 403
        return 0

    async def _tunnel(
        self, at: float, head: Head, client: SocketStream, rx: BufferedByteReceiveStream
    ) -> None:
        host, _, port = head.first[1].rpartition(":")
        upstream = await _connect(host.strip("[]"), port)
        if upstream is None:
            await client.send(response_bytes(502, b"cannot reach the target", close=True))
            self._record(at, head, True, 502)
            return
        async with upstream:
            await client.send(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            self._record(at, head, True, 200)
            await splice(client, rx, upstream)

    async def _forward(
        self, at: float, head: Head, client: SocketStream, rx: BufferedByteReceiveStream
    ) -> None:
        method, target, version = head.first
        parts = urlsplit(target)
        if parts.scheme != "http" or not parts.hostname or "chunked" in head.get("transfer-encoding").lower():
            await client.send(
                response_bytes(400, b"absolute http:// target with a sized body only", close=True)
            )
            self._record(at, head, True, 400)
            return
        body = await _drain_body(head, rx)
        upstream = await _connect(parts.hostname, str(parts.port or 80))
        if upstream is None:
            await client.send(response_bytes(502, b"cannot reach the origin", close=True))
            self._record(at, head, True, 502)
            return
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        headers = [*head.without(HOP_BY_HOP), ("Connection", "close")]
        if not head.get("host"):
            headers.insert(0, ("Host", parts.netloc.rpartition("@")[2]))
        async with upstream:
            await upstream.send(head_bytes(f"{method} {path} {version}", headers) + body)
            up_rx = BufferedByteReceiveStream(upstream)
            answer = await read_head(up_rx)
            if answer is None:
                await client.send(response_bytes(502, b"the origin closed", close=True))
                self._record(at, head, True, 502)
                return
            kept = answer.without(frozenset({"connection", "keep-alive", "proxy-connection"}))
            await client.send(head_bytes(" ".join(answer.first), [*kept, ("Connection", "close")]))
            self._record(at, head, True, int(answer.first[1]))
            await pipe(up_rx, client)

    def _record(self, at: float, head: Head, authorized: bool, status: int) -> None:
        self.seen.append(Seen(at, head.first[0], head.first[1], authorized, status))


async def _connect(host: str, port: str) -> SocketStream | None:
    """A TCP connection to `host:port`, or `None` if it cannot be made within the connect timeout."""
    try:
        with anyio.fail_after(_CONNECT_TIMEOUT):
            return await anyio.connect_tcp(host, int(port))
    except (OSError, ValueError, TimeoutError):
        return None


async def _drain_body(head: Head, rx: BufferedByteReceiveStream) -> bytes:
    """The request's Content-Length body (read so a refusal is not lost to a reset connection)."""
    try:
        length = int(head.get("content-length", "0") or 0)
    except ValueError:
        return b""
    return await rx.receive_exactly(length) if 0 < length <= _MAX_BODY_BYTES else b""
