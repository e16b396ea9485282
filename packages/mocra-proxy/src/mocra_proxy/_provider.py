"""`ProviderSource`: proxies fetched from an HTTP provider API, within its own rate limit."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Literal
from urllib.parse import parse_qsl, urlsplit

import anyio
import httpx

from ._provider_body import FIELDS, parse_json, parse_text
from ._source_errors import ProviderError

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from ._proxy import Proxy

__all__ = ("ProviderSource", "redact_url")

logger = logging.getLogger(__name__)


class ProviderSource:
    """Proxies from an HTTP endpoint answering plain text (one a line) or a JSON list.

    A JSON answer is a list, found at `json_path` (dot-separated keys, e.g. `"data.proxies"`), of strings
    (as in a file) or of objects with the keys `url`, or `host` and `port` (a number or a string) with
    optional `scheme`, `username`, `password`, and an optional `expires` (Unix seconds or ISO 8601, UTC if
    no zone). `fields` renames keys: `fields={"host": "ip", "expires": "expire_time"}`. A bad item or
    line is logged and skipped.

    The source keeps to its own rate limit: it never sends two requests within `min_interval` seconds; a
    call too soon (after a success or a failure) returns the last fetched proxies not yet expired, without
    a request. Concurrent calls share one request.

    Args:
        url: The endpoint; its credentials and query values never appear in names, logs or errors.
        format: `"text"` or `"json"`.
        json_path: Where the list is in a JSON answer (`None`: the answer is the list).
        fields: Renamed keys of JSON objects (our name → the provider's).
        weight: Order among sources when the pool refills (higher first).
        min_interval: Seconds between two requests at least.
        timeout: Seconds for one request, connecting to reading the whole answer.
        tier: Cost tier of its proxies.
        name: The source's name (`Proxy.source`); the URL without credentials or query values by default.
        ttl: Seconds a proxy lives after it was fetched (`expires_at`), unless its item has an expiry.
        client: An `httpx.AsyncClient` to send with (not closed here); a fresh one per request by default.
        clock: Monotonic seconds, for the rate limit (injected by tests).

    Raises:
        ProviderError: from `fetch`, for an HTTP status ≥ 400, a timeout, a connection error or an answer
            that is not the expected text or JSON.
    """

    def __init__(
        self,
        url: str,
        *,
        format: Literal["text", "json"] = "text",
        json_path: str | None = None,
        fields: Mapping[str, str] | None = None,
        weight: float = 1.0,
        min_interval: float = 60.0,
        timeout: float = 10.0,
        tier: int = 0,
        name: str | None = None,
        ttl: float | None = None,
        client: httpx.AsyncClient | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if format not in ("text", "json"):
            raise ValueError(f"format must be 'text' or 'json', got {format!r}")
        unknown = set(fields or ()) - set(FIELDS)
        if unknown:
            raise ValueError(f"unknown fields {sorted(unknown)}; expected some of {sorted(FIELDS)}")
        self.url = url
        self.name = name if name is not None else redact_url(url)
        self.weight = weight
        self.format = format
        self.json_path = json_path
        self.fields = {**FIELDS, **(fields or {})}
        self.min_interval = min_interval
        self.timeout = timeout
        self.tier = tier
        self.ttl = ttl
        self._client = client
        self._clock = clock
        self._last_request: float | None = None
        self._proxies: list[Proxy] = []
        self._lock = anyio.Lock()
        self.requests = 0
        """How many requests this source has sent."""

    async def fetch(self) -> Sequence[Proxy]:
        """A fresh batch from the provider, or the last one (unexpired) if asked within `min_interval`."""
        async with self._lock:
            now = self._clock()
            if self._last_request is not None and now - self._last_request < self.min_interval:
                wall = time.time()
                return [proxy for proxy in self._proxies if not proxy.expired(wall)]
            self._last_request = now
            self.requests += 1
            body = await self._get()
            self._proxies = self._parse(body)
            logger.debug("%s: %d proxies", self.name, len(self._proxies))
            return self._proxies

    async def _get(self) -> bytes:
        try:
            with anyio.fail_after(self.timeout):
                if self._client is not None:
                    response = await self._client.get(self.url)
                else:
                    async with httpx.AsyncClient(timeout=self.timeout) as client:
                        response = await client.get(self.url)
        except TimeoutError:
            raise ProviderError(self.name, f"no answer within {self.timeout:g} s") from None
        except httpx.HTTPError as exc:
            raise ProviderError(self.name, f"request failed: {type(exc).__name__}") from None
        if response.status_code >= 400:
            raise ProviderError(self.name, f"HTTP {response.status_code}")
        return response.content

    def _parse(self, body: bytes) -> list[Proxy]:
        expires_at = time.time() + self.ttl if self.ttl is not None else None
        if self.format == "text":
            return parse_text(body, name=self.name, tier=self.tier, expires_at=expires_at)
        return parse_json(
            body,
            name=self.name,
            tier=self.tier,
            expires_at=expires_at,
            json_path=self.json_path,
            fields=self.fields,
        )

    def __repr__(self) -> str:
        return f"ProviderSource({self.name!r}, format={self.format!r})"


def redact_url(url: str) -> str:
    """`url` without its user info and with every query value replaced by `***`.

    Example:
        >>> redact_url("https://bob:pw@api.example.com/v1/list?key=s3cret&n=10")
        'https://api.example.com/v1/list?key=***&n=***'
    """
    parts = urlsplit(url)
    where = parts.hostname or ""
    if ":" in where:
        where = f"[{where}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is not None:
        where = f"{where}:{port}"
    query = "&".join(f"{key}=***" for key, _ in parse_qsl(parts.query, keep_blank_values=True))
    return f"{parts.scheme}://{where}{parts.path}" + (f"?{query}" if query else "")
