from __future__ import annotations

import re

import pytest

from mocra_core.scope import Allow, Deny, UrlRules, compile_glob


@pytest.mark.parametrize(
    ("glob", "url", "matches"),
    [
        ("https://example.com/*", "https://example.com/a", True),
        ("https://example.com/*", "https://example.com/a/b", False),
        ("https://example.com/**", "https://example.com/a/b", True),
        ("https://*.example.com/**", "https://example.com/a", False),
        ("https://*.example.com/**", "https://shop.example.com/a", True),
        ("**/item?id=*", "https://example.com/x/item?id=3", True),
        ("**/item?id=*", "https://example.com/x/itemXid=3", False),  # `?` is literal
        ("**/a[1]", "https://example.com/a[1]", True),  # brackets are literal
        ("**/a[1]", "https://example.com/a1", False),
        ("https://example.com/a.html", "https://example.com/aXhtml", False),  # `.` is literal
        ("https://example.com/", "https://example.com/extra", False),  # whole URL
    ],
)
def test_glob(glob: str, url: str, matches: bool) -> None:
    assert (compile_glob(glob).fullmatch(url) is not None) is matches
    assert Allow(glob).matches(url) is matches


def test_regex_searches_anywhere() -> None:
    assert Deny(re.compile(r"[?&]sort=")).matches("https://example.com/list?page=2&sort=asc")
    assert not Deny(re.compile(r"^https://example\.com/$")).matches("https://example.com/x")


def test_first_matching_rule_wins() -> None:
    url = "https://example.com/products/1?sort=asc"
    allow_first = UrlRules(Allow("https://example.com/products/**"), Deny(re.compile(r"sort=")))
    deny_first = UrlRules(Deny(re.compile(r"sort=")), Allow("https://example.com/products/**"))
    assert allow_first.allows(url)
    assert not deny_first.allows(url)


def test_no_match_with_an_allow_rule_is_denied() -> None:
    rules = UrlRules(Allow("https://example.com/**"), Deny("**/logout"))
    assert not rules.allows("https://other.org/")
    assert rules.default is False


def test_no_match_with_only_deny_rules_is_allowed() -> None:
    rules = UrlRules(Deny("**/logout"), Deny(re.compile(r"\.php$")))
    assert rules.allows("https://other.org/")
    assert not rules.allows("https://other.org/index.php")
    assert UrlRules().allows("https://anything/")


def test_explicit_default() -> None:
    assert UrlRules(Allow("**/a"), default=True).allows("https://x.org/b")
    assert not UrlRules(Deny("**/a"), default=False).allows("https://x.org/b")
    assert not UrlRules(default=False).allows("https://x.org/b")


def test_rules_are_checked() -> None:
    with pytest.raises(TypeError, match="Allow"):
        UrlRules("https://example.com/**")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="glob str or a compiled re.Pattern"):
        Allow(42)  # type: ignore[arg-type]


def test_rules_compare_and_print() -> None:
    assert Allow("**/a") == Allow("**/a")
    assert Allow("**/a") != Deny("**/a")
    assert len({Allow("**/a"), Allow("**/a")}) == 1
    assert repr(UrlRules(Deny("**/a"))) == "UrlRules(Deny('**/a'), default=True)"
