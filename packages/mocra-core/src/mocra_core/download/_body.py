"""Reading a response body under the size cap, and draining a redirect's body so its connection is reused.

`read_decoded` and `drain` work on any stream of chunks (the aiohttp downloader's too); `read_body` and
`discard_body` apply them to an httpx response, which they close on every path, shielded and bounded, so a
cancelled or failed read never leaks a pooled connection.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio

from ._decode import BodyDecoder
from ._transport import map_error

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping

    import httpx

    from ..http import Request

__all__ = ("CLOSE_TIMEOUT", "discard_body", "drain", "read_body", "read_decoded")

CLOSE_TIMEOUT = 5.0
"""Seconds a response (or the pool) gets to close on the error and cancel paths."""

_DRAIN_BYTES = 64 * 1024  # a redirect body up to this is read so its connection can be reused


async def read_decoded(
    chunks: AsyncIterator[bytes],
    headers: Mapping[str, str],
    method: str,
    request: Request,
    *,
    max_body_bytes: int,
) -> bytes:
    """The body of a response to `method` with `headers` (case-insensitive), decoded from its `chunks`.

    A body sent as it is (no `Content-Encoding`) whose `Content-Length` is over `max_body_bytes` fails
    before a chunk is read (unless it answers a HEAD).

    Raises:
        BodyTooLarge: The declared or the decoded body passes `max_body_bytes`.
        DownloadError: The compressed data is corrupt.

    Example:
        >>> import anyio
        >>> from mocra_core.http import Request
        >>> async def chunks() -> AsyncIterator[bytes]:
        ...     yield b"hello, "
        ...     yield b"world"
        >>> async def main() -> bytes:
        ...     headers, request = {"content-length": "12"}, Request("https://a.test/")
        ...     return await read_decoded(chunks(), headers, "GET", request, max_body_bytes=100)
        >>> anyio.run(main)
        b'hello, world'
    """
    encoding = headers.get("content-encoding")
    decoder = BodyDecoder(encoding or "", max_body_bytes, request)
    if encoding is None and method != "HEAD":
        declared = headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > max_body_bytes:
            raise decoder.too_large(int(declared))
    async for chunk in chunks:
        decoder.feed(chunk)
    return decoder.finish()


async def drain(chunks: AsyncIterator[bytes]) -> bool:
    """Read and drop `chunks` up to 64 KiB; whether they ended by then (the connection can be reused)."""
    read = 0
    async for chunk in chunks:
        read += len(chunk)
        if read > _DRAIN_BYTES:
            return False
    return True


async def read_body(
    resp: httpx.Response,
    request: Request,
    url: str,
    method: str,
    *,
    max_body_bytes: int,
    errors: tuple[type[BaseException], ...],
) -> bytes:
    """The decoded body of `resp`, closing it; a transport error in `errors` becomes a `DownloadError`.

    Raises:
        BodyTooLarge: The decoded body passes `max_body_bytes` (or a declared `Content-Length` does).
    """
    stream: Any = resp.stream
    iterator = stream.__aiter__()
    try:
        body = await read_decoded(iterator, resp.headers, method, request, max_body_bytes=max_body_bytes)
    except errors as exc:
        await _close(resp, iterator)
        raise map_error(exc, request, url) from exc
    except BaseException:
        await _close(resp, iterator)
        raise
    await resp.aclose()
    return body


async def discard_body(
    resp: httpx.Response, request: Request, url: str, *, errors: tuple[type[BaseException], ...]
) -> None:
    """Read and drop a redirect's body (up to 64 KiB, so its connection goes back to the pool), then close."""
    stream: Any = resp.stream
    iterator = stream.__aiter__()
    try:
        await drain(iterator)
    except errors as exc:
        raise map_error(exc, request, url) from exc
    finally:
        await _close(resp, iterator)


async def _close(resp: httpx.Response, iterator: Any) -> None:
    """Close a response and its body iterator, shielded and bounded (runs on the error and cancel paths)."""
    with anyio.move_on_after(CLOSE_TIMEOUT, shield=True):
        aclose = getattr(iterator, "aclose", None)
        if aclose is not None:
            await aclose()
        await resp.aclose()
