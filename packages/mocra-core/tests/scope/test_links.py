from __future__ import annotations

import re

import pytest

from mocra_core import ConfigError
from mocra_core.download import HttpxDownloader
from mocra_core.http import Request, Response
from mocra_core.scope import IGNORED_EXTENSIONS, Allow, Deny, Link, LinkExtractor, Scope, UrlRules
from mocra_core.testing import LocalServer, ServerResponse

BASE = "https://example.com/dir/page"


def page(html: str | bytes, url: str = BASE, content_type: str = "text/html; charset=utf-8") -> Response:
    body = html.encode() if isinstance(html, str) else html
    return Response(url, 200, [("Content-Type", content_type)], body, Request(url))


def urls(extractor: LinkExtractor, response: Response) -> list[str]:
    return [link.url for link in extractor.extract(response)]


def test_links_resolved_in_document_order_with_text() -> None:
    html = """<p><a href="a">A <b>bold</b>
      link</a> <a href="/b">B</a><area href="c" alt="C"><link href="/style" rel="next">
      <a href="mailto:x@y">m</a><a href="javascript:void(0)">j</a><a href="#top">t</a><a href="">e</a>
      <a href="//cdn.example.org/d#frag">D</a><a>no href</a>"""
    links = LinkExtractor().extract(page(html))
    assert links == [
        Link("https://example.com/dir/a", "A bold link"),
        Link("https://example.com/b", "B"),
        Link("https://example.com/dir/c", ""),
        Link("https://cdn.example.org/d", "D"),
    ]


def test_tags_and_attrs() -> None:
    html = '<a href="/a">a</a><link href="/next" rel="next"><img src="/i"><div data-url="/x">x</div>'
    assert urls(LinkExtractor(tags=("link",)), page(html)) == ["https://example.com/next"]
    extractor = LinkExtractor(tags=("a", "div"), attrs=("href", "data-url"))
    assert urls(extractor, page(html)) == ["https://example.com/a", "https://example.com/x"]


def test_restrict_css_regions() -> None:
    html = """<nav><a href="/n">n</a></nav><main><a href="/m1">1</a><section class="s"><a href="/m2">2</a>
      </section></main><footer><a href="/f">f</a></footer>"""
    assert urls(LinkExtractor(restrict_css=("main",)), page(html)) == [
        "https://example.com/m1",
        "https://example.com/m2",
    ]
    both = LinkExtractor(restrict_css=("footer", "section.s"))
    assert urls(both, page(html)) == ["https://example.com/m2", "https://example.com/f"]


def test_invalid_css_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="invalid CSS selector"):
        LinkExtractor(restrict_css=("div[",)).extract(page("<a href='/x'>x</a>"))


def test_broken_html_still_yields_links() -> None:
    html = b"""<html><body><div><a href="/one">one<a href='/two'>two</div></span>
      <table><tr><td><a href=/three>three</td></table>\x00<a href="/four"<a href="/five">five
      <p><a href="/six" rel=nofollow>six"""
    assert urls(LinkExtractor(), page(html)) == [
        "https://example.com/one",
        "https://example.com/two",
        "https://example.com/three",
        "https://example.com/four",
        "https://example.com/six",
    ]


def test_base_href_and_page_encoding_are_honoured() -> None:
    html = '<meta charset="gbk"><base href="https://other.example.net/root/"><a href="s?q=中文">x</a>'
    response = page(html.encode("gbk"), content_type="text/html")
    assert urls(LinkExtractor(), response) == ["https://other.example.net/root/s?q=%D6%D0%CE%C4"]


def test_deny_extensions_default_and_custom() -> None:
    html = """<a href="/a.PNG">i</a><a href="/b.pdf?x=1">p</a><a href="/c.tar.gz">t</a><a href="/d.html">h</a>
      <a href="/e.php">php</a><a href="/dir.zip/page">dir</a><a href="https://example.zip">host</a>"""
    assert urls(LinkExtractor(), page(html)) == [
        "https://example.com/d.html",
        "https://example.com/e.php",
        "https://example.com/dir.zip/page",
        "https://example.zip",
    ]
    assert len(urls(LinkExtractor(deny_extensions=()), page(html))) == 7
    assert urls(LinkExtractor(deny_extensions=(".PHP", "html")), page(html))[:3] == [
        "https://example.com/a.PNG",
        "https://example.com/b.pdf?x=1",
        "https://example.com/c.tar.gz",
    ]
    assert {"jpg", "zip", "mp4", "docx", "pdf", "css", "exe"} <= IGNORED_EXTENSIONS


def test_unique_compares_canonical_forms_and_keeps_the_first() -> None:
    html = """<a href="/p?b=2&a=1">first</a><a href="/p?a=1&b=2#x">second</a>
      <a href="HTTPS://EXAMPLE.com:443/p?a=1&b=2">third</a><a href="/q">q</a><a href="/q">q again</a>"""
    links = LinkExtractor().extract(page(html))
    assert links == [Link("https://example.com/p?b=2&a=1", "first"), Link("https://example.com/q", "q")]
    assert len(LinkExtractor(unique=False).extract(page(html))) == 5


def test_canonicalize_returns_canonical_urls() -> None:
    html = '<a href="/a/./b/../c d?z=1&y=">x</a><a href="HTTP://Example.COM:80/">y</a>'
    assert urls(LinkExtractor(canonicalize=True), page(html)) == [
        "https://example.com/a/c%20d?y=&z=1",
        "http://example.com/",
    ]


def test_rules_first_match_wins_on_extracted_urls() -> None:
    html = """<a href="/products/1">p1</a><a href="/products/1?sort=asc">sorted</a>
      <a href="/about">about</a><a href="/products/private/2">private</a>"""
    rules = UrlRules(
        Deny("**/private/**"), Allow("https://example.com/products/**"), Deny(re.compile("sort"))
    )
    assert urls(LinkExtractor(rules=rules), page(html)) == [
        "https://example.com/products/1",
        "https://example.com/products/1?sort=asc",
    ]
    deny_only = UrlRules(Deny(re.compile(r"[?&]sort=")))
    assert urls(LinkExtractor(rules=deny_only), page(html)) == [
        "https://example.com/products/1",
        "https://example.com/about",
        "https://example.com/products/private/2",
    ]


def test_rules_see_canonical_urls_when_canonicalising() -> None:
    html = '<a href="/s?b=1&a=2">x</a>'
    rules = UrlRules(Allow("https://example.com/s?a=2&b=1"))
    assert urls(LinkExtractor(rules=rules), page(html)) == []
    assert urls(LinkExtractor(rules=rules, canonicalize=True), page(html)) == [
        "https://example.com/s?a=2&b=1"
    ]


def test_allowed_and_denied_domains() -> None:
    html = """<a href="https://example.com/a">a</a><a href="https://ads.example.com/b">b</a>
      <a href="https://bücher.de/c">c</a><a href="https://other.org/d">d</a>"""
    allowed = LinkExtractor(allowed_domains=("example.com", "xn--bcher-kva.de"))
    assert urls(allowed, page(html)) == [
        "https://example.com/a",
        "https://ads.example.com/b",
        "https://xn--bcher-kva.de/c",
    ]
    denied = LinkExtractor(allowed_domains=("example.com",), denied_domains=("ads.example.com",))
    assert urls(denied, page(html)) == ["https://example.com/a"]
    with pytest.raises(ConfigError, match="denied_domains: 'https://x.org' is a URL"):
        LinkExtractor(denied_domains=("https://x.org",))


def test_nofollow_marked_or_skipped() -> None:
    html = '<a href="/a" rel="NoFollow noopener">a</a><a href="/b" rel="nofollowed">b</a><a href="/c">c</a>'
    assert [(link.url[-2:], link.nofollow) for link in LinkExtractor().extract(page(html))] == [
        ("/a", True),
        ("/b", False),
        ("/c", False),
    ]
    assert urls(LinkExtractor(skip_nofollow=True), page(html)) == [
        "https://example.com/b",
        "https://example.com/c",
    ]


@pytest.mark.parametrize("content", ["noindex, nofollow", "NONE", "nofollow"])
def test_meta_robots_nofollow_marks_every_link(content: str) -> None:
    html = f'<meta name="Robots" content="{content}"><a href="/a">a</a>'
    assert LinkExtractor().extract(page(html)) == [Link("https://example.com/a", "a", True)]
    assert LinkExtractor(skip_nofollow=True).extract(page(html)) == []


def test_meta_robots_index_follow_changes_nothing() -> None:
    html = (
        '<meta name="robots" content="index, follow"><meta name="author" content="nofollow">'
        '<a href="/a">a</a>'
    )
    assert LinkExtractor().extract(page(html)) == [Link("https://example.com/a", "a")]


def test_no_tags_means_no_links() -> None:
    assert LinkExtractor(tags=()).extract(page('<a href="/a">a</a>')) == []


def test_extractor_is_a_frozen_value() -> None:
    extractor = LinkExtractor(restrict_css=("main",))
    assert extractor == LinkExtractor(restrict_css=("main",))
    assert "restrict_css=('main',)" in repr(extractor)
    with pytest.raises(AttributeError):
        extractor.unique = False  # type: ignore[misc]


@pytest.mark.anyio
async def test_over_a_downloaded_page_with_scope_on_loopback_hosts() -> None:
    other = LocalServer({"/": ServerResponse(body="other")})
    async with other.running() as other_base:
        other_localhost = other_base.replace("127.0.0.1", "localhost")
        site = LocalServer()
        async with site.running() as base:
            site.route(
                "/",
                ServerResponse(
                    body=f"""<!doctype html><title>t</title><div id=c>
                    <a href="/a">same</a><a href="{other_base}/b">other port</a>
                    <a href="{other_localhost}/c">other host</a><a href="http://127.0.0.2:1/d">other ip</a>
                    <a href="/img.jpg">img</a><a href="/a#again">dup</a></div>"""
                ),
            )
            async with HttpxDownloader() as downloader:
                response = await downloader.download(Request(base + "/"))
    found = urls(LinkExtractor(restrict_css=("#c",)), response)
    assert found == [base + "/a", other_base + "/b", other_localhost + "/c", "http://127.0.0.2:1/d"]
    origin = response.request.url
    assert [u for u in found if Scope("same-origin").allows(u, origin=origin)] == [base + "/a"]
    assert [u for u in found if Scope("same-hostname").allows(u, origin=origin)] == found[:2]
    assert [u for u in found if Scope("same-domain").allows(u, origin=origin)] == found[:2]
    assert [u for u in found if Scope(allowed_domains=["localhost"]).allows(u)] == [found[2]]
