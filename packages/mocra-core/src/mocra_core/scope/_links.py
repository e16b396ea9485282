"""`LinkExtractor`: the links of a response, filtered by region, rules, domains and extensions."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..http import canonicalize_url
from ..http._url import clean_href
from ._extensions import IGNORED_EXTENSIONS, has_extension
from ._host import DomainSet, origin_of

if TYPE_CHECKING:
    from collections.abc import Iterator

    from ..http import Node, Response
    from ._rules import UrlRules

__all__ = ("Link", "LinkExtractor")

_WEB_SCHEMES = ("http", "https")


@dataclass(frozen=True, slots=True)
class Link:
    """A link found on a page.

    Attributes:
        url: Absolute http(s) URL without its fragment (canonical if the extractor canonicalises).
        text: The element's text, whitespace collapsed (`""` for `<area>` and `<link>`).
        nofollow: The element's `rel` holds `nofollow`, or the page's `<meta name="robots">` says so.
    """

    url: str
    text: str = ""
    nofollow: bool = False


def _rel_nofollow(node: Node) -> bool:
    rel = node.attrs.get("rel")
    return rel is not None and "nofollow" in rel.lower().split()


@dataclass(frozen=True, kw_only=True, slots=True)
class LinkExtractor:
    """Extracts links from a response, filtered; the typed successor of Scrapy's `LinkExtractor`.

    Links are taken from the elements of `tags` carrying one of `attrs` inside the regions matched by
    `restrict_css` (the whole page when empty), in document order; each value is cleaned and resolved as
    `Response.urljoin` does (`<base href>`, the page's encoding for the query), then kept only if it is
    http(s), its host is in `allowed_domains` (subdomains included) and not in `denied_domains`, its path
    does not end in one of `deny_extensions` and `rules` allow it. Fragments are dropped. With `unique`,
    a URL seen before on the page in any spelling (same canonical form) is skipped: the first one wins.

    Args:
        restrict_css: CSS selectors of the regions to take links from, e.g. `("#content", "nav.pages")`.
        tags: Element names to read links from (add `"link"` for `<link href>`).
        attrs: Attribute names holding the URL.
        rules: Allow/deny rules, tried on the absolute URL (canonical if `canonicalize`).
        allowed_domains: Domains a link's host must be or be under; empty allows every host.
        denied_domains: Domains whose hosts (and subdomains) are skipped.
        deny_extensions: File extensions skipped (lower case, no dot); Scrapy's list by default, `()`
            for none.
        canonicalize: Return canonical URLs (`mocra_core.http.canonicalize_url`): for comparing and
            storing; the server sees the URL as written otherwise, which is safer to fetch.
        unique: Skip a URL already returned (compared canonically).
        skip_nofollow: Leave out `nofollow` links instead of returning them marked.

    Raises:
        ConfigError: a domain in `allowed_domains`/`denied_domains` has a scheme, a path or a port.
        ValueError: from `extract`, a selector in `restrict_css` is not valid CSS.

    Example:
        >>> from mocra_core.http import Request, Response
        >>> html = b'''<nav><a href="/page/2">Next</a></nav><div id="content">
        ...   <a href="/item/1?b=2&a=1#top"> Item
        ...   one </a><a href="/item/1?a=1&b=2">again</a><a href="/logo.png">logo</a>
        ...   <a href="https://ads.example.net/x" rel="nofollow sponsored">ad</a></div>'''
        >>> page = Response("https://example.com/list", 200, [], html, Request("https://example.com/list"))
        >>> for link in LinkExtractor(restrict_css=("#content",)).extract(page):
        ...     print(link)
        Link(url='https://example.com/item/1?b=2&a=1', text='Item one', nofollow=False)
        Link(url='https://ads.example.net/x', text='ad', nofollow=True)
        >>> extractor = LinkExtractor(denied_domains=("example.net",), canonicalize=True)
        >>> [link.url for link in extractor.extract(page)]
        ['https://example.com/page/2', 'https://example.com/item/1?a=1&b=2']
    """

    restrict_css: tuple[str, ...] = ()
    tags: tuple[str, ...] = ("a", "area")
    attrs: tuple[str, ...] = ("href",)
    rules: UrlRules | None = None
    allowed_domains: tuple[str, ...] = ()
    denied_domains: tuple[str, ...] = ()
    deny_extensions: frozenset[str] | tuple[str, ...] = IGNORED_EXTENSIONS
    canonicalize: bool = False
    unique: bool = True
    skip_nofollow: bool = False
    _selector: str = field(init=False, repr=False, compare=False)
    _allowed: DomainSet = field(init=False, repr=False, compare=False)
    _denied: DomainSet = field(init=False, repr=False, compare=False)
    _extensions: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        elements = [f"{tag}[{attr}]" for tag in self.tags for attr in self.attrs]
        regions = self.restrict_css or ("",)
        selector = ", ".join(f"{region} {element}".strip() for region in regions for element in elements)
        object.__setattr__(self, "_selector", selector)
        object.__setattr__(self, "_allowed", DomainSet(self.allowed_domains, key="allowed_domains"))
        object.__setattr__(self, "_denied", DomainSet(self.denied_domains, key="denied_domains"))
        extensions = frozenset(ext.lower().lstrip(".") for ext in self.deny_extensions)
        object.__setattr__(self, "_extensions", extensions)

    def extract(self, response: Response) -> list[Link]:
        """Return the links of `response` that pass every filter, in document order.

        Raises:
            ValueError: a selector in `restrict_css` is not valid CSS.
        """
        return list(self._iter(response))

    def _iter(self, response: Response) -> Iterator[Link]:
        if not self._selector:
            return
        page_nofollow = _meta_nofollow(response)
        seen: set[str] = set()
        for node in response.css(self._selector):
            for attr in self.attrs:
                value = node.attrs.get(attr)
                if value:
                    break
            else:
                continue
            href = clean_href(value)
            if not href or href.startswith("#"):
                continue
            url = response.urljoin(href).partition("#")[0]
            if url.partition(":")[0].lower() not in _WEB_SCHEMES or not self._host_allowed(url):
                continue
            if self._extensions and has_extension(url, self._extensions):
                continue
            canonical = canonicalize_url(url) if self.canonicalize or self.unique else url
            if self.canonicalize:
                url = canonical
            if self.rules is not None and not self.rules.allows(url):
                continue
            if self.unique:
                if canonical in seen:
                    continue
                seen.add(canonical)
            nofollow = page_nofollow or _rel_nofollow(node)
            if nofollow and self.skip_nofollow:
                continue
            text = " ".join(node.text(deep=True, separator=" ").split()) if node.tag in ("a", "A") else ""
            yield Link(url, text, nofollow)

    def _host_allowed(self, url: str) -> bool:
        origin = origin_of(url)
        if origin is None:
            return False
        if self._allowed and not self._allowed.contains(origin.host):
            return False
        return not (self._denied and self._denied.contains(origin.host))


def _meta_nofollow(response: Response) -> bool:
    for meta in response.css("meta[name][content]"):
        name = meta.attrs.get("name") or ""
        if name.lower() == "robots":
            content = (meta.attrs.get("content") or "").lower().replace(",", " ").split()
            if "nofollow" in content or "none" in content:
                return True
    return False
