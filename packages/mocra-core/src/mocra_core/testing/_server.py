"""`LocalServer`: a small HTTP/1.1 server on 127.0.0.1 for tests and the offline demo.

It speaks just enough HTTP/1.1 (keep-alive, Content-Length bodies) to be crawled by real clients, counts
hits per path so tests can assert "fetched once", and runs inside the caller's task group or, for
synchronous callers, in a blocking portal thread.
"""

from __future__ import annotations

import contextlib
import logging
from collections import Counter, deque
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

import anyio
import anyio.abc
import anyio.from_thread
from anyio.streams.buffered import BufferedByteReceiveStream

if TYPE_CHECKING:
    from anyio.abc import SocketStream

__all__ = ("Handler", "LocalServer", "ServerRequest", "ServerResponse")

logger = logging.getLogger(__name__)

_MAX_HEADER_BYTES = 64 * 1024
_MAX_BODY_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class ServerRequest:
    """A request as the server received it."""

    method: str
    target: str
    headers: Mapping[str, str]
    body: bytes

    @property
    def path(self) -> str:
        """The path part of the request target."""
        return urlsplit(self.target).path

    @property
    def query(self) -> dict[str, list[str]]:
        """The parsed query string."""
        return parse_qs(urlsplit(self.target).query)


@dataclass
class ServerResponse:
    """A response to send. `raw`, when set, is written to the socket as it is (for broken-server tests).

    `chunks`, when set, replaces `body`: each piece is sent as one chunk of a `Transfer-Encoding: chunked`
    body, as soon as the iterable yields it (an async generator can sleep between pieces to make a slow
    server). An async generator can be consumed once: return a fresh response from a handler.
    """

    status: int = 200
    body: bytes | str = b""
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None
    close: bool = False
    chunks: Iterable[bytes] | AsyncIterable[bytes] | None = None

    def encode(self) -> bytes:
        """The bytes on the wire: status line, headers and body."""
        if self.raw is not None:
            return self.raw
        body = self.body.encode() if isinstance(self.body, str) else self.body
        headers = {"Content-Type": "text/html; charset=utf-8", **self.headers}
        if self.chunks is not None:
            headers["Transfer-Encoding"] = "chunked"
            body = b""
        else:
            headers["Content-Length"] = str(len(body))
        if self.close:
            headers["Connection"] = "close"
        try:
            reason = HTTPStatus(self.status).phrase
        except ValueError:
            reason = "Unknown"
        head = f"HTTP/1.1 {self.status} {reason}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        return head.encode("latin-1") + b"\r\n" + body


Handler = Callable[[ServerRequest], Awaitable[ServerResponse]]


class LocalServer:
    """An HTTP/1.1 server on 127.0.0.1 with a route table and per-path hit counts.

    Routes map a path to a `ServerResponse` (served as is) or an async handler. Unknown paths get 404.

    Args:
        routes: Path → response or handler. More can be added later with `route`.
        fallback: Handler for paths not in `routes`.

    Example:
        >>> import httpx
        >>> server = LocalServer({"/": ServerResponse(body="<h1>hi</h1>")})
        >>> with server.run_in_thread() as base_url:
        ...     httpx.get(base_url + "/").text
        '<h1>hi</h1>'
        >>> server.hits["/"]
        1
    """

    def __init__(
        self,
        routes: Mapping[str, ServerResponse | Handler] | None = None,
        *,
        fallback: Handler | None = None,
    ) -> None:
        self.routes: dict[str, ServerResponse | Handler] = dict(routes or {})
        self.fallback = fallback
        self.hits: Counter[str] = Counter()
        self.requests: deque[ServerRequest] = deque(maxlen=10_000)  # the latest ones, for assertions
        self.port = 0

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT`, once the server listens."""
        if not self.port:
            raise RuntimeError("the server is not listening yet")
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        """Absolute URL of `path` on this server."""
        return self.base_url + path

    def route(self, path: str, target: ServerResponse | Handler) -> None:
        """Add or replace the route for `path`."""
        self.routes[path] = target

    @asynccontextmanager
    async def running(self) -> AsyncIterator[str]:
        """Serve inside the current task group until the block exits; yields the base URL."""
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=self.port)
        self.port = listener.extra(anyio.abc.SocketAttribute.local_port)
        async with listener, anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, self._serve_connection)
            try:
                yield self.base_url
            finally:
                tg.cancel_scope.cancel()

    @contextlib.contextmanager
    def run_in_thread(self) -> Iterator[str]:
        """Serve from a blocking portal's event-loop thread until the block exits; yields the base URL."""
        with (
            anyio.from_thread.start_blocking_portal() as portal,
            portal.wrap_async_context_manager(self.running()) as base_url,
        ):
            yield base_url

    async def _serve_connection(self, stream: SocketStream) -> None:
        buffered = BufferedByteReceiveStream(stream)
        async with stream:
            with contextlib.suppress(anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError):
                while True:
                    request = await self._read_request(buffered)
                    if request is None:
                        return
                    response = await self._respond(request)
                    await stream.send(response.encode())
                    if response.chunks is not None and response.raw is None:
                        await _send_chunks(stream, response.chunks)
                    if response.close or request.headers.get("connection", "").lower() == "close":
                        return

    async def _read_request(self, stream: BufferedByteReceiveStream) -> ServerRequest | None:
        head = await stream.receive_until(b"\r\n\r\n", _MAX_HEADER_BYTES)
        if not head:
            return None
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = min(int(headers.get("content-length", "0") or 0), _MAX_BODY_BYTES)
        body = await stream.receive_exactly(length) if length else b""
        return ServerRequest(method, target, headers, body)

    async def _respond(self, request: ServerRequest) -> ServerResponse:
        self.hits[request.path] += 1
        self.requests.append(request)
        target = self.routes.get(request.path) or self.routes.get(request.target) or self.fallback
        if target is None:
            return ServerResponse(404, "<h1>Not Found</h1>")
        if isinstance(target, ServerResponse):
            return target
        try:
            return await target(request)
        except Exception:
            logger.exception("handler for %s failed", request.target)
            return ServerResponse(500, "<h1>Internal Server Error</h1>")


async def _send_chunks(stream: SocketStream, chunks: Iterable[bytes] | AsyncIterable[bytes]) -> None:
    """Send a chunked body: each non-empty piece as one chunk, then the last (empty) chunk."""
    if isinstance(chunks, AsyncIterable):
        async for piece in chunks:
            if piece:
                await stream.send(b"%x\r\n%s\r\n" % (len(piece), piece))
    else:
        for piece in chunks:
            if piece:
                await stream.send(b"%x\r\n%s\r\n" % (len(piece), piece))
    await stream.send(b"0\r\n\r\n")
