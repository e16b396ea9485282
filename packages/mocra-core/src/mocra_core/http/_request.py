"""`Request`: what a stage asks the downloader to fetch (what the user set; its routing travels beside it)."""

from __future__ import annotations

import operator
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode, urlsplit

import msgspec

from .._errors import InvalidURL

__all__ = ("Request", "RequestRecord")

_JSON = msgspec.json.Encoder()
_UPPER_METHODS = frozenset(("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"))
_NO_META: Mapping[str, Any] = {}

ParamValue = str | int | float | bool | None
Params = Mapping[str, ParamValue | list[ParamValue]] | list[tuple[str, ParamValue]]


# The common shape, `http(s)://host[:port][/?#...]` in printable ASCII without spaces or user info, which
# `urlsplit` would accept as it is (a port of 1-65535 is checked apart); anything else takes the full checks.
_PLAIN_URL = re.compile(r"https?://[A-Za-z0-9.\-_~]+(?::([0-9]{1,5}))?(?:[/?#][!-~]*)?\Z").match


def check_url(url: str) -> str:
    """Return `url` unchanged if it can be crawled, else raise `InvalidURL` naming the problem.

    Example:
        >>> check_url("https://example.com/a?b=1")
        'https://example.com/a?b=1'
        >>> check_url("https://example.com:0/")
        Traceback (most recent call last):
        ...
        mocra_core._errors.InvalidURL: invalid URL 'https://example.com:0/': port 0
    """
    if not isinstance(url, str):
        raise InvalidURL(repr(url), f"expected a str, got {type(url).__name__}")
    if is_plain_url(url):
        return url  # `_check_parts` would find an http(s) scheme, a host, a valid port and no whitespace
    return _check_parts(url)


def is_plain_url(url: str) -> bool:
    """Whether `url` has the common shape `check_url` accepts without splitting it (see `_PLAIN_URL`)."""
    plain = _PLAIN_URL(url)
    return plain is not None and (plain.group(1) is None or 0 < int(plain.group(1)) < 65536)


def _check_parts(url: str) -> str:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise InvalidURL(url, str(exc)) from None
    if parts.scheme not in ("http", "https"):
        raise InvalidURL(url, "scheme must be http or https (resolve relative URLs with response.urljoin)")
    if not parts.hostname:
        raise InvalidURL(url, "no host")
    if port == 0:
        raise InvalidURL(url, "port 0")
    if any(c in url for c in " \t\r\n"):
        raise InvalidURL(url, "contains whitespace")
    return url


def _add_params(url: str, params: Params) -> str:
    """Append query parameters before any fragment, after any query in `url`; `None` values are left out."""
    pairs: Any = params.items() if isinstance(params, Mapping) else params
    kept = [(k, v) for k, v in pairs if v is not None]
    base, hash_mark, fragment = url.partition("#")
    sep = "" if base.endswith(("?", "&")) else "&" if "?" in base else "?"
    return f"{base}{sep}{urlencode(kept, doseq=True)}{hash_mark}{fragment}"


class RequestRecord(msgspec.Struct, array_like=True, omit_defaults=True):
    """The wire and disk form of a `Request` (msgpack); fields are only ever appended, with defaults.

    Its fields are the one list of a request's fields: `Request`'s slots, `to_record`, `from_record` and
    `replace` follow it; a field added here is added to `Request.__init__` and appended to `RoutedRecord`
    too (a test checks). The engine's routing is not a request field: it travels beside it (`Routing`).
    """

    url: str
    method: str = "GET"
    headers: dict[str, str] = {}
    cookies: dict[str, str] = {}
    body: bytes | None = None
    meta: dict[str, Any] = {}
    priority: int = 0
    timeout: float | None = None
    dont_filter: bool = False
    max_retries: int | None = None
    callback: str | None = None
    downloader: str | None = None


_FIELDS = RequestRecord.__struct_fields__
_VALUES = operator.attrgetter(*_FIELDS)  # a request's values in the record's field order


class Request:
    """One HTTP request to make: what you set, nothing the engine adds (its routing travels beside it).

    `params`, `json` and `form` are folded into `url` and `body` when the request is made, so what is
    fingerprinted, queued and downloaded is exactly what you see on the object.

    Args:
        url: Absolute http(s) URL. Relative URLs must be resolved first (`response.urljoin`, `ctx.follow`).
        method: HTTP method, upper-cased.
        headers: Extra request headers; the downloader adds its defaults (User-Agent names mocra).
        cookies: Cookies for this request only, sent beside the session's cookie jar.
        params: Query parameters appended to the URL.
        body: Raw body; `str` is encoded as UTF-8.
        json: A JSON body (msgspec-encoded); sets `Content-Type: application/json`.
        form: A form body; sets `Content-Type: application/x-www-form-urlencoded`.
        meta: Your own data, carried to the response (`response.meta`) and through follow-ups you make.
        priority: Higher runs earlier.
        timeout: Total seconds for this request, overriding the downloader's default.
        dont_filter: Skip the seen-set check (fetch even if already seen).
        max_retries: Retries for this request, overriding the retry policy's default.
        callback: Name of the spider method that parses the response; `None` means `parse`.
        downloader: Name of a registered downloader to use instead of the default.

    Raises:
        InvalidURL: `url` has no host, a scheme other than http/https, or a bad port.
        ValueError: more than one of `body`, `json` and `form` was given.

    Example:
        >>> r = Request("https://example.com/search", params={"q": "books", "page": 2})
        >>> r.url
        'https://example.com/search?q=books&page=2'
        >>> Request("https://example.com/api", method="post", json={"a": 1}).headers
        {'Content-Type': 'application/json'}
    """

    __slots__ = ("_fingerprint", *RequestRecord.__struct_fields__)  # the record's fields: one list

    def __init__(
        self,
        url: str,
        *,
        method: str = "GET",
        headers: Mapping[str, str] | None = None,
        cookies: Mapping[str, str] | None = None,
        params: Params | None = None,
        body: bytes | str | None = None,
        json: Any = None,
        form: Mapping[str, str] | list[tuple[str, str]] | None = None,
        meta: Mapping[str, Any] | None = None,
        priority: int = 0,
        timeout: float | None = None,
        dont_filter: bool = False,
        max_retries: int | None = None,
        callback: str | None = None,
        downloader: str | None = None,
    ) -> None:
        if params:
            url = _add_params(url, params)
        self.url = check_url(url)
        self.method = method if method in _UPPER_METHODS else method.upper()  # shares the common strings
        self.headers: dict[str, str] = dict(headers) if headers else {}
        if (body is not None) + (json is not None) + (form is not None) > 1:
            raise ValueError("give at most one of body, json and form")
        if json is not None:
            body = _JSON.encode(json)
            self.headers.setdefault("Content-Type", "application/json")
        elif form is not None:
            body = urlencode(form).encode()
            self.headers.setdefault("Content-Type", "application/x-www-form-urlencoded")
        self.body: bytes | None = body.encode() if isinstance(body, str) else body
        self.cookies: dict[str, str] = dict(cookies) if cookies else {}
        self.meta: dict[str, Any] = dict(meta) if meta else {}
        self.priority = priority
        self.timeout = timeout
        self.dont_filter = dont_filter
        self.max_retries = max_retries
        self.callback = callback
        self.downloader = downloader
        self._fingerprint: bytes | None = None

    def replace(self, **changes: Any) -> Request:
        """Return a copy with some fields changed; the original is left as it is.

        Example:
            >>> Request("https://example.com/a").replace(url="https://example.com/b").url
            'https://example.com/b'
        """
        values = dict(zip(_FIELDS, _VALUES(self), strict=True))
        if ("json" in changes or "form" in changes) and "body" not in changes:
            values["body"] = None  # the new payload replaces the old body and its content type
            if "headers" not in changes:
                values["headers"] = {
                    k: v for k, v in values["headers"].items() if k.lower() != "content-type"
                }
        values.update(changes)
        url = values.pop("url")
        return Request(url, **values)

    @property
    def fingerprint(self) -> bytes:
        """Identity of the request within a crawl job: method, canonical URL and body hash (16 bytes)."""
        if self._fingerprint is None:
            from ._url import fingerprint

            self._fingerprint = fingerprint(self.method, self.url, self.body)
        return self._fingerprint

    def to_record(self) -> RequestRecord:
        """The serialisable form of this request (it shares the request's dicts)."""
        return RequestRecord(*_VALUES(self))

    @classmethod
    def from_record(cls, record: RequestRecord) -> Request:
        """Rebuild a request from its serialisable form (made by `to_record`, so not checked again)."""
        request = object.__new__(cls)
        for name, value in zip(_FIELDS, msgspec.structs.astuple(record), strict=True):
            setattr(request, name, value)
        request.headers = dict(record.headers)  # the record may share them with another request
        request.cookies = dict(record.cookies)
        request.meta = dict(record.meta)
        request._fingerprint = None
        return request

    def __repr__(self) -> str:
        return f"<Request {self.method} {self.url}>"
