"""`DownloadSettings`: how the downloader talks HTTP (timeouts, caps, pool, transport, default headers)."""

from __future__ import annotations

import functools
import importlib.metadata
from typing import Literal

import msgspec

from .._bounds import at_least, positive
from ._autothrottle import AutoThrottleSettings

__all__ = ("DEFAULT_HEADERS", "TRANSPORTS", "DownloadSettings")

TRANSPORTS = ("aiohttp", "httpx-aiohttp", "httpx")
"""The values of `DownloadSettings.transport`, the default first."""

DEFAULT_HEADERS: dict[str, str] = {
    "Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
    "Accept-Language": "en",
}
"""Headers sent with every request unless the settings or the request override them (as Scrapy's)."""


@functools.cache
def _default_user_agent() -> str:
    # not `mocra_core.__version__`: settings are built while `mocra_core/__init__` is still importing
    try:
        version = importlib.metadata.version("mocra-core")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        version = "0"
    return f"mocra/{version}"


def _default_headers() -> dict[str, str]:
    return dict(DEFAULT_HEADERS)


class DownloadSettings(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """How a downloader talks HTTP. Durations are seconds; sizes are bytes.

    Attributes:
        user_agent: The `User-Agent` header, also the token robots.txt rules are matched against.
        connect_timeout: Seconds to open a connection (TCP and TLS).
        read_timeout: Seconds to wait for each read (and write) on an open connection.
        total_timeout: Seconds for the whole exchange: every redirect hop and the full body.
            `Request.timeout` overrides it per request.
        max_body_bytes: Cap on a response body *after* decompression; passing it raises `BodyTooLarge`.
        max_redirects: Redirect hops followed before `TooManyRedirects`; 0 returns the 3xx response as is.
        max_connections: Size of the connection pool shared by every host.
        transport: Which built-in downloader `build_downloader` makes: `"aiohttp"` (the default:
            `AiohttpDownloader`, aiohttp natively, no httpx objects per request), `"httpx-aiohttp"`
            (`HttpxDownloader`, httpx's model over an aiohttp pool) or `"httpx"` (`HttpxDownloader` over
            httpx's own pool). All three behave alike; see `benchmarks/README.md`, "Downloader transport".
        verify: Verify TLS certificates.
        headers: Default request headers; `Request.headers` are merged over them.
        autothrottle: A per-host delay that follows the host's latency (`[download.autothrottle]`,
            `AutoThrottleSettings`; off by default).

    Raises:
        ValueError: a value makes no sense (a negative timeout, a zero cap, ...); the message names the field.

    Example:
        >>> DownloadSettings(read_timeout=5.0).total_timeout
        60.0
        >>> DownloadSettings(connect_timeout=-1)
        Traceback (most recent call last):
        ...
        ValueError: connect_timeout: must be > 0, got -1
    """

    user_agent: str = msgspec.field(default_factory=_default_user_agent)
    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    total_timeout: float = 60.0
    max_body_bytes: int = 10 * 1024 * 1024
    max_redirects: int = 10
    max_connections: int = 100
    transport: Literal["aiohttp", "httpx-aiohttp", "httpx"] = "aiohttp"
    verify: bool = True
    headers: dict[str, str] = msgspec.field(default_factory=_default_headers)
    autothrottle: AutoThrottleSettings = AutoThrottleSettings()

    def __post_init__(self) -> None:
        positive(self, "connect_timeout", "read_timeout", "total_timeout")
        at_least(self, 1, "max_body_bytes", "max_connections")
        at_least(self, 0, "max_redirects")
        if not self.user_agent.strip():
            raise ValueError("user_agent: must not be empty")
        if self.transport not in TRANSPORTS:
            raise ValueError(
                f"transport: expected 'aiohttp', 'httpx-aiohttp' or 'httpx', got {self.transport!r}"
            )
