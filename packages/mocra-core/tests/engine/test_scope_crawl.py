"""A crawl's scope: follow-ups, seeds and redirect hops out of scope are dropped, counted, never fetched.

Hosts on this machine: `127.0.0.1` and `localhost` are two domains (an IP address and a bare name are each
their own), two servers on `127.0.0.1` are one hostname with two origins.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import ClassVar

import pytest

from mocra_core import Allow, Deny, MocraBuilder, UrlRules, on_item
from mocra_core.http import Request, Response
from mocra_core.modules import Ctx
from mocra_core.scope import ScopeStrategy
from mocra_core.testing import LocalServer, ServerResponse

from .test_crawl import Item, LinkSpider, page

pytestmark = pytest.mark.anyio


@pytest.fixture
async def other() -> AsyncIterator[LocalServer]:
    """A second server on 127.0.0.1: the same hostname and domain as `server`, another origin."""
    site = LocalServer()
    async with site.running():
        yield site


def on_localhost(server: LocalServer, path: str) -> str:
    return f"http://localhost:{server.port}{path}"


def site(server: LocalServer, other: LocalServer) -> None:
    """A home page linking to its own page, another origin's, another domain's, and a redirect away."""
    server.route(
        "/",
        page("/own", other.url("/port"), on_localhost(server, "/elsewhere"), "/go-away", "/go-port"),
    )
    server.route("/own", page())
    server.route("/elsewhere", page())
    server.route("/go-away", ServerResponse(302, headers={"Location": on_localhost(server, "/landed")}))
    server.route("/go-port", ServerResponse(302, headers={"Location": other.url("/hopped")}))
    server.route("/landed", page())
    other.route("/port", page())
    other.route("/hopped", page())


async def crawl(
    builder: MocraBuilder, spider: LinkSpider
) -> tuple[list[Item], dict[str, int], dict[str, int]]:
    items: list[Item] = []
    result = await builder.spider(spider, on_item(items.append)).run_async()
    assert result.ok, result
    return items, result.stats.dropped, result.stats.offsite_hosts


def paths(items: list[Item]) -> set[str]:
    return {"/" + item.url.split("/", 3)[3] for item in items}


async def test_the_default_scope_is_the_seeds_registrable_domain(
    builder: MocraBuilder, server: LocalServer, other: LocalServer
) -> None:
    site(server, other)

    items, dropped, hosts = await crawl(builder, LinkSpider(server.url("/")))

    assert paths(items) == {"/", "/own", "/port", "/hopped"}  # 127.0.0.1 on any port is one domain
    assert server.hits["/elsewhere"] == 0 and server.hits["/landed"] == 0  # never fetched
    assert server.hits["/go-away"] == 1  # the hop to localhost was refused, its target not fetched
    assert dropped["offsite"] == 2
    assert hosts == {"localhost": 2}


@pytest.mark.parametrize(
    ("strategy", "expected", "offsite"),
    [
        ("all", {"/", "/own", "/port", "/hopped", "/elsewhere", "/landed"}, 0),
        ("same-hostname", {"/", "/own", "/port", "/hopped"}, 2),
        ("same-domain", {"/", "/own", "/port", "/hopped"}, 2),
        ("same-origin", {"/", "/own"}, 4),
    ],
)
async def test_each_strategy_keeps_its_links_and_counts_the_others(
    builder: MocraBuilder,
    server: LocalServer,
    other: LocalServer,
    strategy: ScopeStrategy,
    expected: set[str],
    offsite: int,
) -> None:
    site(server, other)

    items, dropped, _ = await crawl(builder.set(f"crawl.scope={strategy}"), LinkSpider(server.url("/")))

    assert paths(items) == expected
    assert dropped.get("offsite", 0) == offsite
    assert other.hits["/hopped"] == (1 if "/hopped" in expected else 0)


class OnLocalhost(LinkSpider):
    allowed_domains: ClassVar = ("localhost",)


async def test_allowed_domains_hold_for_follows_seeds_and_a_seeds_redirect(
    builder: MocraBuilder, server: LocalServer, other: LocalServer, caplog: pytest.LogCaptureFixture
) -> None:
    site(server, other)
    server.route("/start", ServerResponse(302, headers={"Location": server.url("/own")}))

    spider = OnLocalhost(on_localhost(server, "/"), server.url("/"), on_localhost(server, "/start"))
    items, dropped, hosts = await crawl(builder, spider)

    # from localhost's home page: /own is followed (same host); other's 127.0.0.1 links are not
    assert paths(items) == {"/", "/own", "/elsewhere", "/landed"}
    assert server.hits["/"] == 1  # the seed on 127.0.0.1 was not fetched
    assert "not seeded, out of the crawl's scope" in caplog.text
    assert server.hits["/start"] == 1 and dropped["offsite"] >= 3  # the seed's redirect to 127.0.0.1 too
    assert set(hosts) == {"127.0.0.1"}


async def test_a_spiders_own_scope_wins_over_the_settings(
    builder: MocraBuilder, server: LocalServer, other: LocalServer
) -> None:
    class Everywhere(LinkSpider):
        scope = "all"

    site(server, other)

    items, dropped, _ = await crawl(builder.set("crawl.scope=same-origin"), Everywhere(server.url("/")))

    assert "/elsewhere" in paths(items) and "offsite" not in dropped


async def test_rules_deny_first_match_wins_and_dont_filter_skips_the_scope(
    builder: MocraBuilder, server: LocalServer
) -> None:
    class Rules(LinkSpider):
        rules = UrlRules(Allow("**/keep/private*"), Deny("**/private/**"))

        async def parse(self, response: Response, ctx: Ctx[Item]) -> None:
            await super().parse(response, ctx)
            if response.url.endswith("/"):
                ctx.follow(Request(on_localhost(server, "/forced"), dont_filter=True))

    server.route("/", page("/private/a", "/keep/private-b", "/public"))
    for path in ("/private/a", "/keep/private-b", "/public", "/forced"):
        server.route(path, page())

    items, dropped, _ = await crawl(builder, Rules(server.url("/")))

    assert paths(items) == {"/", "/keep/private-b", "/forced"}  # Allow listed first wins over Deny
    assert server.hits["/private/a"] == 0 and server.hits["/public"] == 0
    assert dropped["rules"] == 2  # /private/a; /public matched no rule, and an Allow exists: denied


async def test_rules_of_one_links_or_follow_call(builder: MocraBuilder, server: LocalServer) -> None:
    class PerCall(LinkSpider):
        async def parse(self, response: Response, ctx: Ctx[Item]) -> None:
            ctx.emit(Item(url=response.url, status=response.status, title=""))
            for href in response.links(rules=UrlRules(Deny("**/skip*"))):
                ctx.follow(href, rules=UrlRules(Deny("**/also-not*")))

    server.route("/", page("/a", "/skip-me", "/also-not"))
    for path in ("/a", "/skip-me", "/also-not"):
        server.route(path, page())

    items, dropped, _ = await crawl(builder, PerCall(server.url("/")))

    assert paths(items) == {"/", "/a"}
    assert dropped["rules"] == 1  # the follow's own rules; links() just did not return /skip-me
