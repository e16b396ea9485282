"""Reading and writing HTTP/1.1 heads and piping bytes: what the test proxy and origin share."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from http import HTTPStatus
from typing import TYPE_CHECKING

import anyio
from anyio.abc import ByteStream

if TYPE_CHECKING:
    from anyio.abc import ByteReceiveStream, ByteSendStream
    from anyio.streams.buffered import BufferedByteReceiveStream

__all__ = (
    "HOP_BY_HOP",
    "MAX_HEAD_BYTES",
    "Head",
    "head_bytes",
    "pipe",
    "read_head",
    "response_bytes",
    "splice",
)

MAX_HEAD_BYTES = 64 * 1024
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authorization",
        "proxy-authenticate",
        "proxy-connection",
        "te",
        "upgrade",
    }
)


@dataclass(frozen=True)
class Head:
    """A request or response head: its first line split in three, and its headers in order."""

    first: tuple[str, str, str]
    headers: list[tuple[str, str]]

    def get(self, name: str, default: str = "") -> str:
        """The first header called `name` (case-insensitive), else `default`."""
        name = name.lower()
        return next((value for key, value in self.headers if key.lower() == name), default)

    def without(self, names: frozenset[str]) -> list[tuple[str, str]]:
        """The headers whose lower-case names are not in `names`."""
        return [(key, value) for key, value in self.headers if key.lower() not in names]


async def read_head(stream: BufferedByteReceiveStream) -> Head | None:
    """The next head on `stream`, or `None` when the peer closed cleanly before sending one.

    Raises:
        ValueError: the first line is not three words (not HTTP/1.x).
    """
    try:
        raw = await stream.receive_until(b"\r\n\r\n", MAX_HEAD_BYTES)
    except (anyio.EndOfStream, anyio.IncompleteRead):
        return None
    lines = raw.decode("latin-1").split("\r\n")
    words = lines[0].split(" ", 2)
    if len(words) != 3:
        raise ValueError(f"not an HTTP/1.x first line: {lines[0]!r}")
    headers = []
    for line in lines[1:]:
        key, _, value = line.partition(":")
        headers.append((key.strip(), value.strip()))
    return Head((words[0], words[1], words[2]), headers)


def head_bytes(first: str, headers: list[tuple[str, str]]) -> bytes:
    """`first` and `headers` as the bytes of a head (ending with the blank line)."""
    return (first + "\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n").encode("latin-1")


def response_bytes(
    status: int, body: bytes = b"", *, headers: list[tuple[str, str]] | None = None, close: bool = False
) -> bytes:
    """A whole HTTP/1.1 response with a Content-Length body."""
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = "Unknown"
    fields = [*(headers or []), ("Content-Length", str(len(body)))]
    if close:
        fields.append(("Connection", "close"))
    return head_bytes(f"HTTP/1.1 {status} {reason}", fields) + body


async def pipe(source: ByteReceiveStream, sink: ByteSendStream) -> None:
    """Copy `source` to `sink` until `source` ends or either side breaks; then end `sink`'s sending side."""
    with contextlib.suppress(
        anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError
    ):
        async for chunk in source:
            await sink.send(chunk)
    if isinstance(sink, ByteStream):
        with contextlib.suppress(Exception):  # a TLS stream or a closed socket cannot half-close
            await sink.send_eof()


async def splice(client: ByteStream, client_rx: ByteReceiveStream, upstream: ByteStream) -> None:
    """Pipe both ways between `client` (read through `client_rx`) and `upstream` until both directions end."""
    async with anyio.create_task_group() as tg:
        tg.start_soon(pipe, client_rx, upstream)
        await pipe(upstream, client)
        tg.cancel_scope.cancel()
