"""A module's scope and rules are built once when it is compiled; its own values win over the settings'."""

from __future__ import annotations

import re
from typing import Any

import pytest

from mocra_core import ConfigError
from mocra_core.http import Response
from mocra_core.modules import Ctx, Module, Node, Spider, compile_module
from mocra_core.scope import Allow, Deny, UrlRules


class Plain(Spider[None]):
    name = "plain"

    async def parse(self, response: Response, ctx: Ctx[None]) -> None:
        pass


class Hostname(Plain):
    name = "hostname"
    scope = "same-hostname"


class Shop(Plain):
    name = "shop"
    allowed_domains = ("Example.com", "bücher.de")


class Step(Node[None]):
    pass


class Steps(Module[None]):
    name = "steps"
    scope = "same-origin"
    allowed_domains = ("example.com",)
    rules = UrlRules(Deny("**/logout*"))

    def nodes(self) -> list[Node[None]]:
        return [Step()]


def test_without_a_scope_of_its_own_a_module_takes_the_settings_strategy() -> None:
    assert compile_module(Plain()).scope.strategy == "same-domain"  # the settings' default
    compiled = compile_module(Plain(), scope="same-hostname")
    assert (compiled.scope.strategy, compiled.scope_declared, compiled.rules) == (
        "same-hostname",
        False,
        None,
    )
    assert not compiled.scope.allows("http://localhost/", origin="http://127.0.0.1/")


def test_a_spider_s_scope_wins_over_the_settings() -> None:
    compiled = compile_module(Hostname(), scope="all")
    assert (compiled.scope.strategy, compiled.scope_declared) == ("same-hostname", True)
    assert compiled.scope.allows("https://example.com:8443/b", origin="http://example.com/a")
    assert not compiled.scope.allows("https://www.example.com/", origin="http://example.com/a")


def test_allowed_domains_alone_are_the_scope() -> None:
    compiled = compile_module(Shop(), scope="same-origin")
    scope = compiled.scope
    assert (scope.strategy, scope.allowed_domains) == ("all", frozenset({"example.com", "xn--bcher-kva.de"}))
    assert scope.allows("https://shop.example.com/", origin="http://bücher.de/")  # another allowed domain
    assert scope.allows("http://xn--bcher-kva.de/x")  # a seed: the allowed domains only
    assert not scope.allows("https://example.org/", origin="https://example.com/")


def test_a_module_of_nodes_declares_scope_domains_and_rules_as_a_spider_does() -> None:
    compiled = compile_module(Steps())
    assert (compiled.scope.strategy, compiled.scope.allowed_domains) == (
        "same-origin",
        frozenset({"example.com"}),
    )
    assert compiled.scope.allows("https://www.example.com/b", origin="https://www.example.com/a")
    assert not compiled.scope.allows("http://www.example.com/b", origin="https://www.example.com/a")
    assert not compiled.scope.allows("https://example.net/b", origin="https://example.net/a")  # both apply
    assert compiled.rules is Steps.rules
    assert compiled.rules is not None and not compiled.rules.allows("https://www.example.com/logout?x")


def test_rules_are_kept_as_declared() -> None:
    rules = UrlRules(Allow("https://example.com/products/**"), Deny(re.compile(r"\?sort=")))

    class Products(Plain):
        name = "products"

    Products.rules = rules
    assert compile_module(Products()).rules is rules


@pytest.mark.parametrize(
    ("domain", "problem"),
    [
        ("example.com:8080", "'example.com:8080' has a port"),
        ("https://example.com", "'https://example.com' is a URL"),
        ("example.com/shop", "'example.com/shop' is a URL"),
        ("", "'' is not a domain name"),
    ],
)
def test_a_bad_allowed_domain_names_the_module(domain: str, problem: str) -> None:
    class Bad(Plain):
        name = "bad"
        allowed_domains = ("example.org", domain)

    with pytest.raises(ConfigError) as info:
        compile_module(Bad())
    assert info.value.key == "bad.allowed_domains"
    assert problem in str(info.value)


def test_allowed_domains_as_one_string_is_refused() -> None:
    class OneString(Plain):
        name = "one"
        allowed_domains = "example.com"

    with pytest.raises(ConfigError, match="one.allowed_domains: expected a list of domains"):
        compile_module(OneString())


def test_an_unknown_scope_names_the_module() -> None:
    class Site(Plain):
        name = "site"
        scope = "same-site"  # type: ignore[assignment]

    with pytest.raises(ConfigError) as info:
        compile_module(Site())
    assert info.value.key == "site.scope"
    assert "'same-site'" in str(info.value) and "same-domain" in str(info.value)


@pytest.mark.parametrize("rules", [[Deny("**/logout*")], Deny("**/logout*"), "**/logout*"])
def test_rules_must_be_url_rules(rules: Any) -> None:
    class Listed(Plain):
        name = "listed"

    Listed.rules = rules
    with pytest.raises(ConfigError) as info:
        compile_module(Listed())
    assert info.value.key == "listed.rules"
    assert "expected UrlRules(Allow(...), Deny(...)) or None" in str(info.value)


def test_the_settings_default_reaches_a_compiled_module_unless_it_declares_its_own() -> None:
    plain = compile_module(Plain())
    scoped = plain.with_default_scope("same-origin")
    assert scoped is not plain and scoped.graph is plain.graph and scoped.name == "plain"
    assert (scoped.scope.strategy, plain.scope.strategy) == ("same-origin", "same-domain")
    assert plain.with_default_scope("same-domain") is plain

    declared = compile_module(Hostname())
    assert declared.with_default_scope("all") is declared
    shop = compile_module(Shop())
    assert shop.with_default_scope("same-origin").scope.strategy == "all"


def test_an_unknown_default_strategy_names_the_setting() -> None:
    with pytest.raises(ConfigError) as info:
        compile_module(Plain()).with_default_scope("nope")  # type: ignore[arg-type]
    assert info.value.key == "crawl.scope"
    with pytest.raises(ConfigError, match="crawl.scope: unknown strategy 'nope'"):
        compile_module(Plain(), scope="nope")  # type: ignore[arg-type]


def test_a_sitemap_spider_whose_rules_name_its_callbacks_needs_no_parse() -> None:

    class Products(Spider[dict[str, str]]):
        name = "products"
        sitemap_urls = ("https://shop.example/sitemap.xml",)
        sitemap_rules = ((r"/product/", "parse_product"),)

        async def parse_product(self, response: Response, ctx: Ctx[dict[str, str]]) -> None:
            ctx.emit({"url": response.url})

    class NoParse(Spider[dict[str, str]]):
        name = "bare"
        sitemap_urls = ("https://shop.example/sitemap.xml",)

    assert compile_module(Products()).name == "products"
    with pytest.raises(ConfigError, match=r"bare\.parse"):
        compile_module(NoParse())
