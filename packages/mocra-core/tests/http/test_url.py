from urllib.parse import urljoin

import pytest

import mocra_core.http._url as url_module
from mocra_core.http import Request, canonicalize_url, fingerprint
from mocra_core.http._url import BaseURL, join_url

CANONICAL = [
    # scheme and host case, default ports, empty path
    ("HTTP://Example.COM", "http://example.com/"),
    ("https://example.com:443/a", "https://example.com/a"),
    ("http://example.com:80/a", "http://example.com/a"),
    ("http://example.com:443/a", "http://example.com:443/a"),
    ("https://example.com:80/a", "https://example.com:80/a"),
    ("http://example.com:8080/a", "http://example.com:8080/a"),
    ("http://example.com:080/", "http://example.com/"),
    ("http://example.com:/a", "http://example.com/a"),
    ("http://user:PaSS@Example.com:80/", "http://user:PaSS@example.com/"),
    ("http://[2001:DB8::1]:80/x", "http://[2001:db8::1]/x"),
    ("http://[2001:db8::1]:8080/x", "http://[2001:db8::1]:8080/x"),
    # fragment
    ("http://example.com/a#frag", "http://example.com/a"),
    ("http://example.com/a?b=1#frag?c=2", "http://example.com/a?b=1"),
    ("http://example.com#x", "http://example.com/"),
    # dot segments; the path keeps its case
    ("http://example.com/a/b/../c", "http://example.com/a/c"),
    ("http://example.com/a/./b/.", "http://example.com/a/b/"),
    ("http://example.com/a/b/..", "http://example.com/a/"),
    ("http://example.com/../../x", "http://example.com/x"),
    ("http://example.com/a/%2e%2E/b", "http://example.com/b"),
    ("http://example.com/A/B", "http://example.com/A/B"),
    ("http://example.com/a/..b/.c", "http://example.com/a/..b/.c"),
    # percent-encoding in the path
    ("http://example.com/%7euser/%41", "http://example.com/~user/A"),
    ("http://example.com/a%2fb", "http://example.com/a%2Fb"),
    ("http://example.com/a%3b;b", "http://example.com/a%3B;b"),
    ("http://example.com/a b", "http://example.com/a%20b"),
    ("http://example.com/a%20b", "http://example.com/a%20b"),
    ("http://example.com/caf\u00e9", "http://example.com/caf%C3%A9"),
    ("http://example.com/caf%c3%a9", "http://example.com/caf%C3%A9"),
    ("http://example.com/%zz/%", "http://example.com/%25zz/%25"),
    ("http://example.com/a|b", "http://example.com/a%7Cb"),
    # query: sorted by key then value, blank values kept, form encoding
    ("http://example.com/?b=2&a=1", "http://example.com/?a=1&b=2"),
    ("http://example.com/?b=2&b=1&a=3", "http://example.com/?a=3&b=1&b=2"),
    ("http://example.com/?a-b=0&a=1", "http://example.com/?a=1&a-b=0"),
    ("http://example.com/?b=&a", "http://example.com/?a=&b="),
    ("http://example.com/?&&a=1&&", "http://example.com/?a=1"),
    ("http://example.com/?", "http://example.com/"),
    ("http://example.com/?q=a+b", "http://example.com/?q=a%20b"),
    ("http://example.com/?q=a%20b", "http://example.com/?q=a%20b"),
    ("http://example.com/?q=a b", "http://example.com/?q=a%20b"),
    ("http://example.com/?q=%2B", "http://example.com/?q=%2B"),
    ("http://example.com/?q=%7e", "http://example.com/?q=~"),
    ("http://example.com/?a=1=2", "http://example.com/?a=1%3D2"),
    ("http://example.com/?a=1%3d2", "http://example.com/?a=1%3D2"),
    ("http://example.com/?q=\u4e2d", "http://example.com/?q=%E4%B8%AD"),
    ("http://example.com/?q=%a3", "http://example.com/?q=%A3"),  # non-UTF-8 bytes survive
    ("http://example.com/?path=/a/b:c", "http://example.com/?path=/a/b:c"),
    # IDN
    ("http://B\u00fccher.DE/", "http://xn--bcher-kva.de/"),
    ("http://WWW.b\u00fccher.de:80", "http://www.xn--bcher-kva.de/"),
    ("http://\u4f8b\u5b50.\u6d4b\u8bd5/", "http://xn--fsqu00a.xn--0zwm56d/"),
    # whitespace around, tabs and newlines inside
    ("  http://example.com/a\n\tb  ", "http://example.com/ab"),
    # not http(s) or not absolute: still normalised, never raises
    ("mailto:A@B.com", "mailto:A@B.com"),
    ("/rel/../x?b=1&a=2#f", "/x?a=2&b=1"),
    ("http://[::1/", "http://[::1/"),
    ("http://example.com:abc/", "http://example.com:abc/"),
]


@pytest.mark.parametrize(("url", "expected"), CANONICAL)
def test_canonical_form(url: str, expected: str) -> None:
    assert canonicalize_url(url) == expected


@pytest.mark.parametrize(("url", "expected"), CANONICAL)
def test_canonical_form_is_idempotent(url: str, expected: str) -> None:
    assert canonicalize_url(expected) == expected


@pytest.mark.parametrize(("url", "expected"), CANONICAL)
def test_fast_split_agrees_with_urlsplit(url: str, expected: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(url_module, "_SPLIT", lambda _url: None)
    assert canonicalize_url(url) == expected


EQUIVALENT = [
    ("http://example.com/a b?x=1 2", "http://example.com/a%20b?x=1+2"),
    ("https://EXAMPLE.com:443/%7Ea/./b/../c?z=&y=2&x=1#top", "https://example.com/~a/c?x=1&y=2&z"),
    ("http://b\u00fccher.de/\u20ac", "http://xn--bcher-kva.de/%E2%82%AC"),
]


@pytest.mark.parametrize(("a", "b"), EQUIVALENT)
def test_equivalent_urls_share_a_fingerprint(a: str, b: str) -> None:
    assert fingerprint("GET", a, None) == fingerprint("GET", b, None)
    assert Request(b).fingerprint == Request(b.replace("+", "%20")).fingerprint


def test_fingerprint_tells_method_body_and_url_apart() -> None:
    url = "https://example.com/search?q=1"
    base = fingerprint("GET", url, None)
    assert len(base) == 16
    assert fingerprint("GET", url, b"") == base
    assert fingerprint("POST", url, None) != base
    assert fingerprint("POST", url, b"a=1") != fingerprint("POST", url, b"a=2")
    assert fingerprint("GET", "https://example.com/search?q=2", None) != base
    assert fingerprint("GET", "https://example.com/Search?q=1", None) != base  # paths are case-sensitive
    slash = fingerprint("GET", "https://example.com/a/b", None)
    assert fingerprint("GET", "https://example.com/a%2Fb", None) != slash


def test_request_fingerprint_uses_the_canonical_url() -> None:
    a = Request("https://Example.com:443/p?b=2&a=1#x", method="post", body=b"x")
    b = Request("https://example.com/p?a=1&b=2", method="POST", body=b"x")
    assert a.fingerprint == b.fingerprint == fingerprint("POST", "https://example.com/p?a=1&b=2", b"x")


@pytest.mark.parametrize(
    ("base", "href", "encoding", "expected"),
    [
        ("https://example.com/a/b", "../x", None, "https://example.com/x"),
        ("https://example.com/a/b", "//cdn.example.org/y", None, "https://cdn.example.org/y"),
        ("https://example.com/a/b", "\n  c?d=1  \t", None, "https://example.com/a/c?d=1"),
        (
            "https://example.com/a/b",
            "/a b/\u00e9?q=\u00e9#\u00e9",
            None,
            "https://example.com/a%20b/%C3%A9?q=%C3%A9#%C3%A9",
        ),
        ("https://example.com/", "/\u4e2d?q=\u4e2d", "gb18030", "https://example.com/%E4%B8%AD?q=%D6%D0"),
        ("https://example.com/", "/?q=\u4e2d", "utf-16-le", "https://example.com/?q=%E4%B8%AD"),
        ("https://example.com/", "/?q=\u20ac", "cp1252", "https://example.com/?q=%80"),
        ("https://example.com/", "/?q=\u4e2d", "cp1252", "https://example.com/?q=%26%2320013%3B"),
        ("https://example.com/", "http://b\u00fccher.de/x", None, "http://xn--bcher-kva.de/x"),
        (
            "https://example.com/",
            "/already%20escaped?a=%E4",
            None,
            "https://example.com/already%20escaped?a=%E4",
        ),
        ("https://example.com/", "mailto:a@b.c", None, "mailto:a@b.c"),
    ],
)
def test_join_url(base: str, href: str, encoding: str | None, expected: str) -> None:
    assert join_url(base, href, encoding=encoding) == expected


BASES = [
    "https://example.com/a/b?q=1",
    "https://example.com",
    "https://u:p@example.com:8080/a/",
    "http://example.com/a/b#f",
    "http://[::1]:8/x/y",
    "https://example.com/a/b;p?q",
]
HREFS = [
    "c",
    "c?d=1#e",
    "/d",
    "/x?y#z",
    "/",
    "//cdn.example.org/e",
    "//h",
    "../f",
    "./k",
    "x/../y",
    "/a/./b",
    ".hidden",
    "?g",
    "#h",
    "https://x.org",
    "http://X.org/a/../b",
    "HTTP://x.org/",
    "http:relative",
    "a:b",
    "a/b:c",
    "mailto:x@y",
    "javascript:void(0)",
    "ftp://f/x",
    "a\\b",
]


@pytest.mark.parametrize("base", BASES)
def test_base_url_fast_paths_agree_with_urljoin(base: str) -> None:
    prepared = BaseURL(base)
    assert [prepared.join(href) for href in HREFS] == [urljoin(base, href) for href in HREFS]
