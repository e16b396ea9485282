"""The pooled transport under `HttpxDownloader` (aiohttp or httpcore), and what its failures become.

`build_transport` makes the pool `DownloadSettings.transport` names; `map_error` turns whatever a
transport raises for a failed exchange (`transport_errors`) into a `DownloadError` or `DownloadTimeout`.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import httpx

from .._errors import DownloadError, DownloadTimeout

if TYPE_CHECKING:
    import aiohttp

    from ..http import Request
    from ._settings import DownloadSettings

__all__ = ("SKIP_AUTO_HEADERS", "build_transport", "map_error", "transport_errors")

SKIP_AUTO_HEADERS = ("Accept", "Accept-Encoding", "Content-Type", "User-Agent")
"""The headers an aiohttp session would add by itself (`Accept: */*`, a body's `Content-Type`): never."""


def build_transport(settings: DownloadSettings, *, proxy: str | None = None) -> httpx.AsyncBaseTransport:
    """The httpx transport of `settings.transport`, `max_connections` wide, cookies left to us.

    `"httpx"` is httpx's own pool (httpcore); `"httpx-aiohttp"` and `"aiohttp"` (`AiohttpDownloader`'s
    name, when an `HttpxDownloader` is given it) are an aiohttp pool under httpx-aiohttp's transport.

    Args:
        settings: Transport, pool size, TLS verification.
        proxy: Send everything through this forward proxy (`http://user:pass@host:port`; `https://` URLs
            through `CONNECT`). A proxy with credentials always gets the httpx pool: aiohttp sends them
            only through its deprecated `BasicAuth`.
    """
    limits = httpx.Limits(
        max_connections=settings.max_connections, max_keepalive_connections=settings.max_connections
    )
    via = None if proxy is None else httpx.Proxy(proxy)
    if settings.transport == "httpx" or (via is not None and via.auth is not None):
        return httpx.AsyncHTTPTransport(verify=settings.verify, limits=limits, trust_env=False, proxy=via)

    import aiohttp
    from httpx_aiohttp import AiohttpTransport

    def make_session() -> aiohttp.ClientSession:  # called lazily, inside the event loop
        connector = aiohttp.TCPConnector(limit=settings.max_connections, ssl=transport.ssl_context)
        return aiohttp.ClientSession(
            connector=connector,
            cookie_jar=aiohttp.DummyCookieJar(),  # cookies are ours, per session
            auto_decompress=False,  # decoded by BodyDecoder, under the size cap
            timeout=aiohttp.ClientTimeout(total=None),  # per-request timeouts come from the extensions
            max_line_size=65536,
            max_field_size=65536,
            skip_auto_headers=SKIP_AUTO_HEADERS,  # send exactly our headers, as httpx does
        )

    transport = AiohttpTransport(
        verify=settings.verify, limits=limits, trust_env=False, proxy=via, client=make_session
    )
    return transport


def transport_errors() -> tuple[type[BaseException], ...]:
    """What a transport raises for a failed exchange; aiohttp's errors only if aiohttp was imported."""
    aiohttp = sys.modules.get("aiohttp")
    if aiohttp is not None:
        return (httpx.HTTPError, aiohttp.ClientError, OSError)
    return (httpx.HTTPError, OSError)


def map_error(exc: BaseException, request: Request, url: str) -> DownloadError:
    """Translate a transport exception; httpx-aiohttp reports a refused connection as `ConnectTimeout`."""
    if isinstance(exc, httpx.TimeoutException):
        cause = exc.__cause__
        from_aiohttp = cause is not None and type(cause).__module__.startswith("aiohttp")
        timed_out = not from_aiohttp or isinstance(cause, TimeoutError)
        detail = cause if from_aiohttp and cause is not None else exc
    else:
        timed_out = isinstance(exc, TimeoutError)
        detail = exc
    where = url if url == request.url else f"{url} (redirected from {request.url})"
    what = "timed out" if timed_out else "failed"
    message = f"{request.method} {where} {what}: {type(detail).__name__}: {detail}".rstrip(": ")
    cls = DownloadTimeout if timed_out else DownloadError
    return cls(message, request=request)
