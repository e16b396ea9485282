from __future__ import annotations

import pytest

from mocra_core import ConfigError
from mocra_core.scope import DomainSet, Origin, Scope, canonical_host, origin_of, registrable_domain

SEED = "http://sub.example.com/start"


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("HTTP://EXAMPLE.com/a", Origin("http", "example.com", None)),
        ("https://example.com.:443/a", Origin("https", "example.com", None)),
        ("https://example.com:80/a", Origin("https", "example.com", 80)),
        ("http://user:pw@Example.com:8080", Origin("http", "example.com", 8080)),
        ("http://bücher.de/", Origin("http", "xn--bcher-kva.de", None)),
        ("http://BÜCHER.de./", Origin("http", "xn--bcher-kva.de", None)),
        ("http://[::1]:8080/", Origin("http", "[::1]", 8080)),
        ("http://127.0.0.1:5000/?q", Origin("http", "127.0.0.1", 5000)),
    ],
)
def test_origins_are_canonical(url: str, origin: Origin) -> None:
    assert origin_of(url) == origin


@pytest.mark.parametrize("url", ["/relative", "mailto:a@example.com", "http:///nohost", "http://h:port/"])
def test_no_origin(url: str) -> None:
    assert origin_of(url) is None
    assert canonical_host(url) is None


@pytest.mark.parametrize(
    ("host", "domain"),
    [
        ("example.co.uk", "example.co.uk"),
        ("www.shop.example.co.uk", "example.co.uk"),
        ("other.co.uk", "other.co.uk"),
        ("co.uk", "co.uk"),
        ("sub.example.com", "example.com"),
        ("localhost", "localhost"),
        ("127.0.0.1", "127.0.0.1"),
        ("[::1]", "[::1]"),
        ("alice.github.io", "alice.github.io"),  # the private section counts
        ("www.xn--bcher-kva.de", "xn--bcher-kva.de"),
    ],
)
def test_registrable_domain(host: str, domain: str) -> None:
    assert registrable_domain(host) == domain


def _allowed(scope: Scope, urls: list[str], origin: str | None = SEED) -> list[str]:
    return [url for url in urls if scope.allows(url, origin=origin)]


CANDIDATES = [
    "http://sub.example.com/a",
    "https://sub.example.com/b",
    "http://sub.example.com:8080/c",
    "http://SUB.Example.COM./d",
    "http://example.com/e",
    "http://other.sub.example.com/f",
    "http://example.org/g",
    "http://notexample.com/h",
    "ftp://sub.example.com/i",
    "mailto:x@sub.example.com",
]


def test_all_admits_any_web_url() -> None:
    assert _allowed(Scope("all"), CANDIDATES) == CANDIDATES[:8]


def test_same_hostname() -> None:
    assert _allowed(Scope("same-hostname"), CANDIDATES) == CANDIDATES[:4]


def test_same_domain() -> None:
    assert _allowed(Scope("same-domain"), CANDIDATES) == CANDIDATES[:6]


def test_same_origin() -> None:
    assert _allowed(Scope("same-origin"), CANDIDATES) == [CANDIDATES[0], CANDIDATES[3]]


def test_default_strategy_is_same_domain_and_all_with_allowed_domains() -> None:
    assert Scope().strategy == "same-domain"
    assert Scope(allowed_domains=["example.com"]).strategy == "all"


def test_same_domain_uses_the_public_suffix_list() -> None:
    scope = Scope("same-domain")
    origin = "http://example.co.uk/"
    assert scope.allows("https://www.example.co.uk/x", origin=origin)
    assert not scope.allows("https://other.co.uk/x", origin=origin)
    assert not scope.allows("https://co.uk/x", origin=origin)
    assert not scope.allows("https://bob.github.io/", origin="https://alice.github.io/")


def test_loopback_hosts_are_distinct() -> None:
    for strategy in ("same-hostname", "same-domain"):
        scope = Scope(strategy)
        assert scope.allows("http://localhost:9000/", origin="http://localhost:8000/")
        assert scope.allows("http://127.0.0.1:9000/", origin="http://127.0.0.1:8000/")
        assert not scope.allows("http://127.0.0.1:8000/", origin="http://localhost:8000/")
        assert not scope.allows("http://127.0.0.2:8000/", origin="http://127.0.0.1:8000/")
    assert not Scope("same-origin").allows("http://localhost:9000/", origin="http://localhost:8000/")


def test_idna_hosts_compare_in_either_spelling() -> None:
    scope = Scope("same-hostname")
    assert scope.allows("http://xn--bcher-kva.de/a", origin="http://Bücher.de/")
    assert scope.allows("http://bücher.de./a", origin="http://xn--bcher-kva.de/")
    assert Scope(allowed_domains=["xn--bcher-kva.de"]).allows("https://shop.bücher.de/")


def test_an_origin_without_host_admits_nothing_relative() -> None:
    assert not Scope("same-domain").allows("http://example.com/", origin="mailto:x@example.com")


def test_seed_without_origin_checks_allowed_domains_only() -> None:
    assert Scope("same-origin").allows("http://anything.org/")
    scope = Scope("same-hostname", allowed_domains=["example.com"])
    assert scope.allows("http://www.example.com/")
    assert not scope.allows("http://example.org/")


def test_allowed_domains_include_subdomains_only_on_label_boundaries() -> None:
    scope = Scope(allowed_domains=["example.com", ".Example.ORG."])
    urls = [
        "http://example.com/",
        "http://a.b.example.com/",
        "http://badexample.com/",
        "http://example.com.evil.net/",
        "http://www.example.org/",
        "http://example.org:8080/",
    ]
    assert _allowed(scope, urls, origin=None) == [urls[0], urls[1], urls[4], urls[5]]


def test_allowed_domains_and_strategy_both_apply() -> None:
    scope = Scope("same-hostname", allowed_domains=["example.com", "example.org"])
    assert scope.allows("http://example.com/a", origin="http://example.com/")
    assert not scope.allows("http://example.org/a", origin="http://example.com/")


@pytest.mark.parametrize(
    ("domain", "problem"),
    [
        ("example.com:8080", "has a port"),
        ("https://example.com", "is a URL"),
        ("example.com/path", "is a URL"),
        ("", "is not a domain name"),
        ("user@example.com", "is not a domain name"),
    ],
)
def test_bad_allowed_domain_is_a_config_error_naming_it(domain: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem) as info:
        Scope(allowed_domains=[domain])
    assert repr(domain) in str(info.value)
    assert info.value.key == "allowed_domains"


def test_allowed_domains_must_be_a_list() -> None:
    with pytest.raises(ConfigError, match="a list of domains"):
        DomainSet("example.com")


def test_unknown_strategy() -> None:
    with pytest.raises(ConfigError, match="unknown strategy 'same-site'"):
        Scope("same-site")  # type: ignore[arg-type]


def test_ipv6_allowed_domain() -> None:
    scope = Scope(allowed_domains=["[::1]"])
    assert scope.allows("http://[::1]:8080/")
    assert not scope.allows("http://127.0.0.1:8080/")


def test_repr() -> None:
    assert repr(Scope("same-origin")) == "Scope('same-origin')"
    assert (
        repr(Scope(allowed_domains=["b.com", "a.com"])) == "Scope('all', allowed_domains=['a.com', 'b.com'])"
    )
