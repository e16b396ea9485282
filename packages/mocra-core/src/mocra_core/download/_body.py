"""Reading a response body under the size cap, and draining a redirect's body so its connection is reused.

Both close the response (and its stream) on every path, shielded and bounded, so a cancelled or failed
read never leaks a pooled connection.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio

from ._decode import BodyDecoder
from ._transport import map_error

if TYPE_CHECKING:
    import httpx

    from ..http import Request

__all__ = ("CLOSE_TIMEOUT", "discard_body", "read_body")

CLOSE_TIMEOUT = 5.0
"""Seconds a response (or the pool) gets to close on the error and cancel paths."""

_DRAIN_BYTES = 64 * 1024  # a redirect body up to this is read so its connection can be reused


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
    decoder = BodyDecoder(resp.headers.get("content-encoding", ""), max_body_bytes, request)
    stream: Any = resp.stream
    iterator = stream.__aiter__()
    try:
        if method != "HEAD" and "content-encoding" not in resp.headers:
            declared = resp.headers.get("content-length")
            if declared is not None and declared.isdigit() and int(declared) > max_body_bytes:
                raise decoder.too_large(int(declared))
        async for chunk in iterator:
            decoder.feed(chunk)
    except errors as exc:
        await _close(resp, iterator)
        raise map_error(exc, request, url) from exc
    except BaseException:
        await _close(resp, iterator)
        raise
    await resp.aclose()
    return decoder.finish()


async def discard_body(
    resp: httpx.Response, request: Request, url: str, *, errors: tuple[type[BaseException], ...]
) -> None:
    """Read and drop a redirect's body (up to 64 KiB, so its connection goes back to the pool), then close."""
    stream: Any = resp.stream
    iterator = stream.__aiter__()
    read = 0
    try:
        async for chunk in iterator:
            read += len(chunk)
            if read > _DRAIN_BYTES:
                break
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
