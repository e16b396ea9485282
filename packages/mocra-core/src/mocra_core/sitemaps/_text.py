"""Plain-text sitemaps: one URL a line."""

from __future__ import annotations

from ._entries import SitemapPage

__all__ = ("TextSitemap",)

_MAX_LINE_BYTES = 64 * 1024


class TextSitemap:
    """Split fed bytes into lines; each `http(s)://` line is a page, other lines are skipped."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._rest = b""

    def feed(self, data: bytes, out: list[SitemapPage]) -> None:
        """Append the pages of the complete lines in `data` to `out`; raises `ValueError` on a huge line."""
        lines = (self._rest + data).split(b"\n")
        self._rest = lines.pop()
        if len(self._rest) > _MAX_LINE_BYTES:
            raise ValueError(f"a line longer than {_MAX_LINE_BYTES} bytes")
        for line in lines:
            self._add(line, out)

    def close(self, out: list[SitemapPage]) -> None:
        """Append the page of the last line, if it has no newline."""
        rest, self._rest = self._rest, b""
        self._add(rest, out)

    def _add(self, line: bytes, out: list[SitemapPage]) -> None:
        url = line.strip().decode("utf-8", "replace")
        if url.startswith(("http://", "https://")):
            out.append(SitemapPage(url=url, sitemap=self._url))
