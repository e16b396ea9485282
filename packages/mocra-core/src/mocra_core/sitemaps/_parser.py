"""`SitemapParser`: bytes in, as they arrive; sitemap entries out, as soon as each is complete."""

from __future__ import annotations

import pyexpat
import zlib
from typing import TYPE_CHECKING, Literal

from ._errors import SitemapError
from ._inflate import Inflater
from ._text import TextSitemap
from ._xml import XmlSitemap

if TYPE_CHECKING:
    from collections.abc import Iterator

    from ._entries import SitemapEntry, SitemapPage

__all__ = ("DEFAULT_MAX_BYTES", "SitemapParser")

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
"""Cap on a sitemap's decoded bytes: the protocol allows 50 MB (52,428,800 bytes) uncompressed."""

_BOMS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")
_MAX_SNIFF_BYTES = 64 * 1024


class SitemapParser:
    """A streaming sitemap parser: feed it bytes in chunks as they come, take the entries it completed.

    Gzip is found by its magic bytes (twice, for a `.gz` file sent with `Content-Encoding: gzip` and not
    decoded) and inflated in bounded steps; then a document whose first non-blank character is `<` is
    XML (`<urlset>` → `SitemapPage`, `<sitemapindex>` → `NestedSitemap`), anything else a plain-text
    sitemap (one URL a line). Memory stays bounded whatever the file's size: only the record being read
    is held.

    Every failure is a `SitemapError` naming `url` and the problem, carrying in `entries` what the failing
    call had completed: malformed or truncated XML, an entity declaration (refused: entity bombs), corrupt
    or truncated gzip, more than `max_bytes` decoded bytes (gzip bombs). After a failure the parser is done.

    Args:
        url: The sitemap's URL, for the entries' `sitemap` and the errors.
        max_bytes: Most decoded bytes accepted.

    Example:
        >>> parser = SitemapParser("https://example.com/sitemap.xml")
        >>> parser.feed(b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>https://ex')
        []
        >>> [page.url for page in parser.feed(b"ample.com/a</loc></url><url><loc>https://example.com/b")]
        ['https://example.com/a']
        >>> [page.url for page in parser.feed(b"</loc></url></urlset>") + parser.close()]
        ['https://example.com/b']
        >>> parser.kind
        'urlset'
    """

    def __init__(self, url: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.url = url
        self.max_bytes = max_bytes
        self.decoded_bytes = 0
        self._inflater = Inflater()
        self._head = b""
        self._xml: XmlSitemap | None = None
        self._text: TextSitemap | None = None
        self._failed: SitemapError | None = None

    @property
    def kind(self) -> Literal["urlset", "sitemapindex", "text"] | None:
        """What the document is, once its first element (or first line) is read."""
        if self._text is not None:
            return "text"
        if self._xml is not None and self._xml.kind in ("urlset", "sitemapindex"):
            return "urlset" if self._xml.kind == "urlset" else "sitemapindex"
        return None

    def feed(self, data: bytes) -> list[SitemapEntry]:
        """Parse the next chunk; returns the entries it completed (raises `SitemapError`, see the class)."""
        return self._run(self._inflater.feed(data), last=False)

    def close(self) -> list[SitemapEntry]:
        """End the document: returns the last entries, or raises `SitemapError` if it was cut short."""
        return self._run(self._inflater.close(), last=True)

    def _run(self, pieces: Iterator[bytes], *, last: bool) -> list[SitemapEntry]:
        if self._failed is not None:
            raise SitemapError(self.url, f"parser already failed: {self._failed.problem}")
        out: list[SitemapEntry] = []
        try:
            for piece in pieces:
                self._count(len(piece))
                self._parse(piece, out)
            if last:
                self._finish(out)
        except SitemapError as exc:
            self._failed = SitemapError(self.url, exc.problem, entries=out)
        except zlib.error as exc:
            self._failed = SitemapError(self.url, f"corrupt gzip data: {exc}", entries=out)
        except pyexpat.ExpatError as exc:
            self._failed = SitemapError(self.url, f"malformed XML: {exc}", entries=out)
        except (EOFError, ValueError) as exc:  # truncated gzip; entity refused; root element; long line
            self._failed = SitemapError(self.url, str(exc), entries=out)
        if self._failed is not None:
            raise self._failed
        return out

    def _count(self, size: int) -> None:
        self.decoded_bytes += size
        if self.decoded_bytes > self.max_bytes:
            raise SitemapError(self.url, f"more than max_bytes={self.max_bytes} decoded bytes")

    def _parse(self, piece: bytes, out: list[SitemapEntry]) -> None:
        if self._xml is not None:
            self._xml.feed(piece, out)
        elif self._text is not None:
            self._text.feed(piece, _pages(out))
        else:
            self._sniff(piece, out, last=False)

    def _sniff(self, piece: bytes, out: list[SitemapEntry], *, last: bool) -> None:
        self._head += piece
        start = self._head
        for bom in _BOMS:
            start = start.removeprefix(bom)
        start = start.lstrip()
        if not start and not last and len(self._head) < _MAX_SNIFF_BYTES:
            return  # only blanks so far
        head, self._head = self._head, b""
        if start.startswith(b"<") or start.startswith(b"\x00<") or start.startswith(b"<\x00"):
            self._xml = XmlSitemap(self.url)
            self._xml.feed(head, out)
        else:
            self._text = TextSitemap(self.url)
            self._text.feed(head, _pages(out))

    def _finish(self, out: list[SitemapEntry]) -> None:
        if self._xml is None and self._text is None:
            self._sniff(b"", out, last=True)
        if self._xml is not None:
            self._xml.close(out)
            if self._xml.kind is None:
                raise ValueError("no root element")
        elif self._text is not None:
            self._text.close(_pages(out))


def _pages(out: list[SitemapEntry]) -> list[SitemapPage]:
    """`out` typed for a text sitemap, which only makes pages (lists are invariant)."""
    return out  # type: ignore[return-value]
