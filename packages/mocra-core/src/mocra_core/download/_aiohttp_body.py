"""An aiohttp response's body read under the size cap, and a redirect's body drained for reuse.

Both give the connection back (`release`) when the body was read to its end and close it on every
other path (an error, a cancel, a body over the cap), so no pooled connection leaks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._body import drain, read_decoded
from ._transport import map_error

if TYPE_CHECKING:
    import aiohttp

    from ..http import Request

__all__ = ("discard_aiohttp_body", "read_aiohttp_body")


async def read_aiohttp_body(
    resp: aiohttp.ClientResponse,
    request: Request,
    url: str,
    method: str,
    *,
    max_body_bytes: int,
    errors: tuple[type[BaseException], ...],
) -> bytes:
    """The decoded body of `resp`; a transport error in `errors` becomes a `DownloadError`.

    Raises:
        BodyTooLarge: The decoded body passes `max_body_bytes` (or a declared `Content-Length` does).
    """
    chunks = resp.content.iter_any()
    try:
        body = await read_decoded(chunks, resp.headers, method, request, max_body_bytes=max_body_bytes)
    except errors as exc:
        resp.close()
        raise map_error(exc, request, url) from exc
    except BaseException:
        resp.close()
        raise
    resp.release()
    return body


async def discard_aiohttp_body(
    resp: aiohttp.ClientResponse, request: Request, url: str, *, errors: tuple[type[BaseException], ...]
) -> None:
    """Read and drop a redirect's body (up to 64 KiB, so its connection goes back to the pool)."""
    try:
        ended = await drain(resp.content.iter_any())
    except errors as exc:
        resp.close()
        raise map_error(exc, request, url) from exc
    except BaseException:
        resp.close()
        raise
    if ended:
        resp.release()
    else:
        resp.close()  # too long to drain: the connection is not worth it
