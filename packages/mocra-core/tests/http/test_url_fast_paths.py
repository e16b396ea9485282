"""The fast paths of `check_url` and `host_of` agree with the full `urlsplit` checks on every URL."""

from __future__ import annotations

import itertools
from urllib.parse import urlsplit

import pytest

from mocra_core._errors import InvalidURL
from mocra_core.http._request import _check_parts, check_url, is_plain_url
from mocra_core.http._url import _IS_CANONICAL, _canonicalize, canonicalize_url, host_of

SCHEMES = ("http", "https", "HTTP", "ftp", "a+b", "1x", "")
HOSTS = ("example.com", "Shop.Example.COM", "a_b~c", ".", "", "u@h", "[::1]", "[::1", "ho st", "bü.de", "h\t")
PORTS = ("", ":", ":0", ":80", ":00080", ":65535", ":65536", ":99999", ":12a", ":-1")
TAILS = ("", "/", "/a b", "/a?q=1#f", "?q", "#f", "/\x7f", "/%zz", "/é", "/a@b", "\n")
URLS = [f"{s}://{h}{p}{t}" for s, h, p, t in itertools.product(SCHEMES, HOSTS, PORTS, TAILS)] + [
    "mailto:x@example.com",
    "javascript:void(0)",
    " http://example.com/",
    "//example.com/a",
    "http:example.com",
]


def _full_check(url: str) -> str | None:
    """The problem `check_url`'s full checks find in `url`, or None if they accept it."""
    try:
        _check_parts(url)
    except InvalidURL as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("chunk", range(4))
def test_check_url_accepts_and_refuses_what_the_full_checks_do(chunk: int) -> None:
    for url in URLS[chunk::4]:
        expected = _full_check(url)
        if is_plain_url(url):
            assert expected is None, url  # the fast path accepted a URL the full checks refuse
        try:
            check_url(url)
        except InvalidURL as exc:
            assert str(exc) == expected, url
        else:
            assert expected is None, url


def test_the_fast_path_covers_the_common_shape() -> None:
    for url in ("http://127.0.0.1:8731/items/1.html", "https://example.com/a?b=1&c=%20#top", "https://x.org"):
        assert is_plain_url(url)


@pytest.mark.parametrize("chunk", range(4))
def test_host_of_is_urlsplit_hostname(chunk: int) -> None:
    for url in URLS[chunk::4]:
        try:
            expected = urlsplit(url).hostname or ""
        except ValueError:
            expected = ""
        assert host_of(url) == expected, url


CANONICAL_CASES = (
    "http://example.com",
    "http://example.com/",
    "https://example.com/a/b.html",
    "http://127.0.0.1/items/1.html",
    "http://h/a/./b",
    "http://h/a/../b",
    "http://h/.hidden",
    "http://h/a%2fb",
    "http://h/a%7E",
    "http://H/a",
    "HTTP://h/a",
    "http://h:80/a",
    "http://h/a b",
    "http://h/é",
    "http://h/a?b=1",
    "http://h/a#f",
    "http://u@h/a",
    "http://h/a;p=1,2@x:y",
    "http://xn--bcher-kva.de/~user",
)


@pytest.mark.parametrize("chunk", range(4))
def test_canonicalize_url_fast_path_agrees_with_the_full_rules(chunk: int) -> None:
    for url in [*CANONICAL_CASES, *URLS][chunk::4]:
        assert canonicalize_url(url) == _canonicalize(url), url


def test_canonicalize_url_fast_path_takes_canonical_urls() -> None:
    for url in ("http://example.com/a/b.html", "https://127.0.0.1/items/1.html", "http://h"):
        assert _IS_CANONICAL(url) is not None
