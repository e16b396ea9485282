"""`Response`: what the downloader hands to parse."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar, overload
from urllib.parse import urljoin

import httpx
import msgspec

from ..queue._fence import Fence  # noqa: TC001 - msgspec resolves it at runtime
from ._charset import declared_encoding, decode_body, decode_lossy
from ._request import Request, RequestRecord
from ._route import NO_ROUTING, Routing
from ._selector import base_href, iter_attribute, may_have_base, parse_html, select, select_first
from ._url import BaseURL, clean_href, escape_url, needs_escape
from ._xselect import XPathSelectable

if TYPE_CHECKING:
    import builtins
    from collections.abc import Iterable

    from selectolax.lexbor import LexborHTMLParser

    from ..scope import UrlRules
    from ._selector import Node

__all__ = ("Response", "ResponseRecord")

T = TypeVar("T")
_UTF8_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_WEB_SCHEMES = ("http", "https")


class ResponseRecord(msgspec.Struct, array_like=True, omit_defaults=True):
    """The wire and disk form of a `Response` (msgpack); fields are only ever appended, with defaults."""

    url: str
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    request: RequestRecord
    elapsed: float = 0.0
    routing: Routing | None = None  # None: made outside the engine
    fence: Fence | None = None  # format 1.1: the claim of the download that made it (queued responses)


class Response(XPathSelectable):
    """A downloaded response, with the request that produced it.

    Non-2xx responses reach your parse callback too, unless the retry policy took them.

    Text, the parsed tree and the `<base href>` are computed on first use and cached on the response; a
    response is meant to be read by one task (the parse stage), not shared between threads.

    Args:
        url: Final URL, after redirects.
        status: HTTP status code.
        headers: Response headers (case-insensitive).
        body: The decoded (decompressed) body.
        request: The request that produced this response.
        elapsed: Seconds from sending the request to the last body byte.
        routing: Where the request belongs in the crawl (node, run, depth, account); set by the engine.
        fence: The claim (request delivery) that downloaded it, set by the engine on a response it queues:
            the items parsed from it are written under that claim, so a response of a download whose lease
            had expired loses to the newer download's.

    Example:
        >>> html = b'<base href="/docs/"><h1> Hi </h1><a href="a.html">A</a><a href="mailto:x@y">M</a>'
        >>> r = Response("https://example.com/x/y", 200, [("Content-Type", "text/html")], html,
        ...              Request("https://example.com/x/y"))
        >>> r.css_first("h1").text(strip=True)
        'Hi'
        >>> r.links()
        ['https://example.com/docs/a.html']
        >>> r.urljoin("../c")
        'https://example.com/c'
    """

    __slots__ = (
        "__weakref__",
        "_base",
        "_decoded",
        "_tree",
        "body",
        "elapsed",
        "fence",
        "headers",
        "request",
        "routing",
        "status",
        "url",
    )

    def __init__(
        self,
        url: str,
        status: int,
        headers: httpx.Headers | Iterable[tuple[str, str]],
        body: bytes,
        request: Request,
        *,
        elapsed: float = 0.0,
        routing: Routing = NO_ROUTING,
        fence: Fence | None = None,
    ) -> None:
        self.url = url
        self.status = status
        self.headers = headers if isinstance(headers, httpx.Headers) else httpx.Headers(list(headers))
        self.body = body
        self.request = request
        self.elapsed = elapsed
        self.routing = routing
        self.fence = fence
        self._decoded: tuple[str, str, bool] | None = None
        self._tree: LexborHTMLParser | None = None
        super().__init__()  # XPathSelectable: the lxml tree, parsed on first use
        self._base: BaseURL | None = None

    @property
    def meta(self) -> dict[str, Any]:
        """The request's `meta` (your own data, carried from the request)."""
        return self.request.meta

    @property
    def ok(self) -> bool:
        """True for a 2xx status."""
        return 200 <= self.status < 300

    # ------------------------------------------------------------------ text

    def _decode(self) -> tuple[str, str, bool]:
        if self._decoded is None:
            self._decoded = decode_body(self.body, self.headers.get("content-type"))
        return self._decoded

    @property
    def encoding(self) -> str:
        """The Python codec `text` is decoded with, e.g. `'utf-8'`, `'gb18030'`, `'cp932'`, `'cp1252'`.

        Found in WHATWG order: a byte-order mark, the `Content-Type` charset, `<meta charset>` (or
        `http-equiv`, or an XML declaration) in the first 4 KB, then detection (valid UTF-8, else
        charset-normalizer). Labels map as browsers map them (`gb2312` → `gb18030`, `shift_jis` →
        `cp932`, `iso-8859-1` → `cp1252`). A declaration that fails on more than 2 characters and 1 % of
        the body is overruled by detection. Computing it decodes the body once (the text is kept for `text`).

        Example:
            >>> body = '<meta charset="gbk"><p>中文</p>'.encode("gbk")
            >>> Response("https://example.com/", 200, [], body, Request("https://example.com/")).encoding
            'gb18030'
        """
        return self._decode()[1]

    @property
    def text(self) -> str:
        """The body as text, decoded with `encoding`; cached.

        Decoding is strict when it can be: bytes invalid in the chosen encoding become U+FFFD only when
        detection found no encoding that decodes the whole body (a truncated last character, a few stray
        bytes). A UTF-8 byte-order mark is not part of the text.
        """
        return self._decode()[0]

    @property
    def text_lossy(self) -> str:
        """The body decoded with the declared encoding (BOM, header, `<meta>`; else UTF-8) and replacements.

        No detection and no fallback: cheap and predictable, for logs, hashes and quick checks. Not cached.
        """
        return decode_lossy(self.body, self.headers.get("content-type"))

    @overload
    def json(self) -> Any: ...
    @overload
    def json(self, type: builtins.type[T]) -> T: ...
    @overload
    def json(self, type: Any) -> Any: ...
    def json(self, type: Any = Any) -> Any:
        """Decode the body as JSON with msgspec, optionally into `type` (a `msgspec.Struct`, `list[int]`...).

        JSON is UTF-8 (a UTF-8 BOM is skipped); a body whose BOM or `Content-Type` charset declares another
        encoding (a GBK API, say) is decoded to `text` first.

        Raises:
            msgspec.DecodeError: the body is not valid JSON.
            msgspec.ValidationError: the JSON does not match `type`.

        Example:
            >>> import msgspec
            >>> class Item(msgspec.Struct):
            ...     id: int
            >>> r = Response("https://example.com/api", 200, [], b'[{"id": 1}]', Request("https://example.com/api"))
            >>> r.json(), r.json(list[Item])
            ([{'id': 1}], [Item(id=1)])
        """
        body: bytes | memoryview | str = self.body
        if self.body.startswith(_UTF8_BOM):
            body = memoryview(self.body)[3:]
        else:
            declared = declared_encoding(self.body[:4], self.headers.get("content-type"))
            if declared is not None and declared[0] != "utf-8" and not self.body.isascii():
                body = self.text
        return msgspec.json.decode(body, type=type)

    # ------------------------------------------------------------------ selectors

    def _parsed(self) -> LexborHTMLParser:
        if self._tree is None:
            text, encoding, exact = self._decode()
            if encoding == "utf-8" and exact:  # lexbor reads bytes as UTF-8: skip the re-encode
                body = self.body
                self._tree = parse_html(body[3:] if body.startswith(_UTF8_BOM) else body)
            else:
                self._tree = parse_html(text)
        return self._tree

    def css(self, selector: str) -> list[Node]:
        """Return the elements matching a CSS selector, in document order (the page is parsed on first use).

        Elements are `mocra_core.http.Node` (selectolax `LexborNode`): `node.attrs["href"]`,
        `node.text(strip=True)`, `node.css("li")`, `node.css_first("a")`.

        Raises:
            ValueError: `selector` is not valid CSS.

        Example:
            >>> html = b"<ul><li>a</li><li> b </li></ul>"
            >>> r = Response("https://example.com/", 200, [], html, Request("https://example.com/"))
            >>> [li.text(strip=True) for li in r.css("ul > li")]
            ['a', 'b']
        """
        return select(self._parsed(), selector)

    def css_first(self, selector: str) -> Node | None:
        """Return the first element matching a CSS selector, or `None`.

        Raises:
            ValueError: `selector` is not valid CSS.
        """
        return select_first(self._parsed(), selector)

    def links(
        self, selector: str = "a[href]", *, attribute: str = "href", rules: UrlRules | None = None
    ) -> list[str]:
        """Return the absolute http(s) URLs of the links matching `selector`, without duplicates, in order.

        Each `attribute` value is resolved as `urljoin` does (against `<base href>` when the page has one);
        empty and fragment-only values (`#top`) and anything that does not resolve to http or https
        (`javascript:`, `mailto:`, `tel:`, `data:`, ...) are skipped, and fragments are dropped (they never
        reach the server). With `rules` (`UrlRules`), only the URLs they allow are returned. For more
        control (regions, extensions, link text, nofollow) use `mocra_core.scope.LinkExtractor`.

        Raises:
            ValueError: `selector` is not valid CSS.

        Example:
            >>> html = b'<a href="../x">x</a><a href="//cdn.example.org/y#top">y</a><a href="javascript:f()">'
            >>> r = Response("https://example.com/a/b/", 200, [], html, Request("https://example.com/a/b/"))
            >>> r.links()
            ['https://example.com/a/x', 'https://cdn.example.org/y']
        """
        tree = self._parsed()
        base = self._base_url()
        found: dict[str, None] = {}
        for value in iter_attribute(tree, selector, attribute):
            href = clean_href(value)
            if not href or href.startswith("#"):  # empty, or this same document
                continue
            url = self._join(base, href)
            if url.partition(":")[0].lower() in _WEB_SCHEMES:
                found[url.partition("#")[0]] = None
        if rules is not None:
            return [url for url in found if rules.allows(url)]
        return list(found)

    # ------------------------------------------------------------------ URLs

    def _base_url(self) -> BaseURL:
        if self._base is None:
            base = self.url
            if may_have_base(self.body) or self.body[:2] in _UTF16_BOMS:  # a bytes scan is 5x cheaper
                href = base_href(self._parsed())
                if href:
                    joined = urljoin(self.url, clean_href(href))
                    if joined.partition(":")[0].lower() in _WEB_SCHEMES:
                        base = joined
            self._base = BaseURL(base)
        return self._base

    def _join(self, base: BaseURL, href: str) -> str:
        url = base.join(href)
        return escape_url(url, self.encoding) if needs_escape(url) else url  # page encoding: only when needed

    def urljoin(self, url: str) -> str:
        """Resolve `url` against this response's final URL, honouring `<base href>`, as a browser would.

        Whitespace around the value is dropped and unsafe characters are percent-encoded (the query in the
        page's encoding), so the result can go straight into a `Request`. A page is parsed here only if its
        body contains a `<base` tag.

        Example:
            >>> r = Response("https://example.com/a/b", 200, [], b"<p>hi</p>", Request("https://example.com/a/b"))
            >>> r.urljoin(" ../c d ")
            'https://example.com/c%20d'
        """
        return self._join(self._base_url(), clean_href(url))

    # ------------------------------------------------------------------ records

    def to_record(self) -> ResponseRecord:
        """The serialisable form of this response."""
        return ResponseRecord(
            url=self.url,
            status=self.status,
            headers=list(self.headers.multi_items()),
            body=self.body,
            request=self.request.to_record(),
            elapsed=self.elapsed,
            routing=None if self.routing is NO_ROUTING else self.routing,
            fence=self.fence,
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
            routing=NO_ROUTING if record.routing is None else record.routing,
            fence=record.fence,
        )

    def __repr__(self) -> str:
        return f"<Response {self.status} {self.url}>"
