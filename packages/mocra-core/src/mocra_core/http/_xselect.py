"""`XPathSelectable`: the XPath half of `Response` (`xpath`, `xpath_first`, `xpath_value`), with lxml."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._lazy import require_extra

if TYPE_CHECKING:
    from lxml import etree

    from ._xpath import XNode

__all__ = ("XPathSelectable",)

_UTF8_BOM = b"\xef\xbb\xbf"


class XPathSelectable:
    """XPath selection over `body`, parsed with lxml on first use and kept in `_xtree` (the `xpath` extra)."""

    __slots__ = ("_xtree",)
    body: bytes

    def __init__(self) -> None:
        self._xtree: etree._Element | None = None

    def _decode(self) -> tuple[str, str, bool]:  # the response's (text, encoding, exact)
        raise NotImplementedError

    def _xparsed(self) -> etree._Element:
        if self._xtree is None:
            require_extra("lxml", "xpath", "Response.xpath")
            from ._xpath import parse_xml_html

            text, encoding, exact = self._decode()
            body = self.body if encoding == "utf-8" and exact else text.encode("utf-8")
            self._xtree = parse_xml_html(body[3:] if body.startswith(_UTF8_BOM) else body)
        return self._xtree

    def xpath(self, expression: str, **variables: Any) -> list[XNode | str]:
        """Return the node-set an XPath 1.0 expression selects (the page is parsed with lxml on first use).

        Elements are `mocra_core.http.XNode` (`.text()`, `.attrs`, `.xpath()`, `.tag`, `.html`, `.element`);
        text nodes and attribute values are `str`. `$name` in the expression reads the keyword argument
        `name` (no quoting to get wrong). For `count()`, `string()`, `sum()` or a comparison use
        `xpath_value`. Needs the `xpath` extra (lxml).

        Raises:
            ValueError: the expression is not valid XPath, names a variable not given, or computes a value.
            MissingExtra: lxml is not installed (`pip install 'mocra[xpath]'`).

        Example:
            >>> from mocra_core.http import Request, Response
            >>> html = b'<ul><li><a href="/a">A</a></li><li><a href="/b"> B </a></li></ul>'
            >>> r = Response("https://example.com/", 200, [], html, Request("https://example.com/"))
            >>> r.xpath("//li/a/@href"), r.xpath_value("count(//li)")
            (['/a', '/b'], 2.0)
            >>> [a.text(strip=True) for a in r.xpath("//a[@href=$h]", h="/b")]
            ['B']
        """
        tree = self._xparsed()  # MissingExtra before the import below can fail
        from ._xpath import xpath

        return xpath(tree, expression, **variables)

    def xpath_first(self, expression: str, **variables: Any) -> XNode | str | None:
        """Return the first node an XPath expression selects, or `None` (see `xpath`)."""
        tree = self._xparsed()
        from ._xpath import xpath_first

        return xpath_first(tree, expression, **variables)

    def xpath_value(self, expression: str, **variables: Any) -> str | float | bool:
        """Return what a computing XPath expression gives: `count()` → `float`, `string()` → `str`, ...

        A node-set expression gives the string value of its first node (`''` for none).
        """
        tree = self._xparsed()
        from ._xpath import xpath_value

        return xpath_value(tree, expression, **variables)
