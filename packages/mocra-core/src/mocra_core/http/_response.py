"""`Response`: what the downloader hands to parse."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

import httpx
import msgspec

from ._request import Request, RequestRecord

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ("Response", "ResponseRecord")


class ResponseRecord(msgspec.Struct, array_like=True, omit_defaults=True):
    """The wire and disk form of a `Response` (msgpack); fields are only ever appended, with defaults."""

    url: str
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    request: RequestRecord
    elapsed: float = 0.0


class Response:
    """A downloaded response, with the request that produced it.

    Non-2xx responses reach your parse callback too, unless the retry policy took them.

    Args:
        url: Final URL, after redirects.
        status: HTTP status code.
        headers: Response headers (case-insensitive).
        body: The decoded (decompressed) body.
        request: The request that produced this response.
        elapsed: Seconds from sending the request to the last body byte.

    Example:
        >>> r = Response("https://example.com/a/b", 200, [], b"<p>hi</p>", Request("https://example.com/a/b"))
        >>> r.urljoin("../c")
        'https://example.com/c'
    """

    __slots__ = ("__weakref__", "_cache", "body", "elapsed", "headers", "request", "status", "url")

    def __init__(
        self,
        url: str,
        status: int,
        headers: httpx.Headers | Iterable[tuple[str, str]],
        body: bytes,
        request: Request,
        *,
        elapsed: float = 0.0,
    ) -> None:
        self.url = url
        self.status = status
        self.headers = headers if isinstance(headers, httpx.Headers) else httpx.Headers(list(headers))
        self.body = body
        self.request = request
        self.elapsed = elapsed
        self._cache: dict[str, Any] = {}

    @property
    def meta(self) -> dict[str, Any]:
        """The request's `meta` (your own data, carried from the request)."""
        return self.request.meta

    @property
    def ok(self) -> bool:
        """True for a 2xx status."""
        return 200 <= self.status < 300

    def urljoin(self, url: str) -> str:
        """Resolve `url` against this response's final URL (`<base href>` is honoured)."""
        return urljoin(self.url, url)

    def to_record(self) -> ResponseRecord:
        """The serialisable form of this response."""
        return ResponseRecord(
            url=self.url,
            status=self.status,
            headers=list(self.headers.multi_items()),
            body=self.body,
            request=self.request.to_record(),
            elapsed=self.elapsed,
        )

    @classmethod
    def from_record(cls, record: ResponseRecord) -> Response:
        """Rebuild a response from its serialisable form."""
        return cls(
            record.url,
            record.status,
            record.headers,
            record.body,
            Request.from_record(record.request),
            elapsed=record.elapsed,
        )

    def __repr__(self) -> str:
        return f"<Response {self.status} {self.url}>"
