"""The `Sitemap:` lines of a robots.txt."""

from __future__ import annotations

from urllib.parse import urljoin

from protego import Protego

__all__ = ("sitemaps_in_robots",)


def sitemaps_in_robots(robots_txt: str, *, robots_url: str | None = None) -> list[str]:
    r"""The sitemap URLs a robots.txt names, in order, each once; relative ones resolved against `robots_url`.

    Args:
        robots_txt: The robots.txt body.
        robots_url: Where it was fetched from, to resolve a relative `Sitemap:` value.

    Example:
        >>> sitemaps_in_robots("User-agent: *\nDisallow: /x\nSitemap: https://example.com/sitemap.xml\n")
        ['https://example.com/sitemap.xml']
        >>> sitemaps_in_robots("sitemap: /s.xml.gz", robots_url="https://example.com/robots.txt")
        ['https://example.com/s.xml.gz']
    """
    urls: dict[str, None] = {}
    for value in Protego.parse(robots_txt).sitemaps:
        url = urljoin(robots_url, value) if robots_url else value
        urls.setdefault(url.strip(), None)
    return list(urls)
