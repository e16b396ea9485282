"""Named pools and per-spider proxy choices in a crawl; proxy failures in the run's stats."""

from __future__ import annotations

import json

import pytest

from mocra_core import ConfigError, Ctx, MocraBuilder, Request, Response, Seeds
from mocra_core.config import Settings
from mocra_core.testing import LocalServer, ServerResponse
from mocra_proxy.testing import ForwardProxy

from .proxy_helpers import Fetch, closed_port, running

pytestmark = pytest.mark.anyio


class Residential(Fetch):
    name = "residential"
    proxy = "residential"


class Plain(Fetch):
    name = "plain"
    proxy = "direct"


def static(key: str, *urls: str) -> str:
    return f'{key}.sources=[{{type = "static", urls = {json.dumps(list(urls))}}}]'


async def test_each_spider_goes_through_the_pool_it_names(builder: MocraBuilder, server: LocalServer) -> None:
    for path in ("/a", "/b", "/c", "/d", "/e"):
        server.route(path, ServerResponse(body=path))
    default, residential = ForwardProxy(), ForwardProxy()
    async with running(default, residential) as [default_url, residential_url]:
        result = await (
            builder.set(static("proxy.pool", default_url), static("proxy.pools.residential", residential_url))
            .spider(Fetch(server.url("/a")))
            .spider(Residential(server.url("/b"), server.url("/c")))
            .spider(Plain(server.url("/d")))
            .run_async()
        )
    assert result.ok, result.failures
    assert dict(server.hits) == {"/a": 1, "/b": 1, "/c": 1, "/d": 1}
    assert [seen.target for seen in default.seen] == [server.url("/a")]
    assert sorted(seen.target for seen in residential.seen) == [server.url("/b"), server.url("/c")]


class Overriding(Fetch):
    """Its spider-wide pool, but one follow-up asks for a fixed proxy and one for none."""

    name = "overriding"
    proxy = "residential"

    def __init__(self, start: str, fixed: str, via_fixed: str, direct: str) -> None:
        super().__init__(start)
        self.fixed, self.via_fixed, self.direct = fixed, via_fixed, direct

    async def parse(self, response: Response, ctx: Ctx[None]) -> None:
        if response.url.endswith("/start"):
            ctx.follow(Request(self.via_fixed, meta={"proxy": self.fixed}))
            ctx.follow(Request(self.direct, meta={"proxy": "direct"}))


async def test_a_requests_meta_wins_over_its_spiders_choice(
    builder: MocraBuilder, server: LocalServer
) -> None:
    for path in ("/start", "/fixed", "/direct"):
        server.route(path, ServerResponse(body=path))
    residential, fixed = ForwardProxy(), ForwardProxy()
    async with running(residential, fixed) as [residential_url, fixed_url]:
        spider = Overriding(server.url("/start"), fixed_url, server.url("/fixed"), server.url("/direct"))
        result = (
            await builder.set(static("proxy.pools.residential", residential_url)).spider(spider).run_async()
        )
    assert result.ok, result.failures
    assert dict(server.hits) == {"/start": 1, "/fixed": 1, "/direct": 1}
    assert [seen.target for seen in residential.seen] == [server.url("/start")]
    assert [seen.target for seen in fixed.seen] == [server.url("/fixed")]


class ViaUrl(Fetch):
    name = "via-url"


async def test_a_spiders_proxy_url_works_without_any_proxy_settings(
    builder: MocraBuilder, server: LocalServer
) -> None:
    server.route("/a", ServerResponse(body="a"))
    fixed = ForwardProxy(username="u", password="pw-123")
    async with running(fixed) as [url]:
        ViaUrl.proxy = url
        try:
            result = await builder.spider(ViaUrl(server.url("/a"))).run_async()
        finally:
            ViaUrl.proxy = None
    assert result.ok, result.failures
    assert [seen.target for seen in fixed.seen] == [server.url("/a")]
    assert all(seen.authorized for seen in fixed.seen)


class Unknown(Fetch):
    name = "unknown"
    proxy = "residentail"


async def test_a_spider_naming_no_pool_stops_the_run_at_start(
    builder: MocraBuilder, server: LocalServer
) -> None:
    server.route("/a", ServerResponse(body="a"))
    with pytest.raises(ConfigError, match=r"unknown\.proxy: no pool named 'residentail' \(pools: pool\)"):
        await (
            builder.set(static("proxy.pool", "http://127.0.0.1:9"))
            .spider(Unknown(server.url("/a")))
            .run_async()
        )
    assert not server.hits


class NotAString(Fetch):
    name = "not-a-string"
    proxy = 3  # type: ignore[assignment]


async def test_a_proxy_that_is_not_a_string_is_refused(builder: MocraBuilder) -> None:
    with pytest.raises(ConfigError, match=r"not-a-string\.proxy: expected 'direct'"):
        await builder.spider(NotAString("http://127.0.0.1:9/")).run_async()


async def test_proxy_failures_are_in_the_runs_stats_redacted(
    builder: MocraBuilder, server: LocalServer
) -> None:
    server.route("/a", ServerResponse(body="a"))
    server.route("/b", ServerResponse(body="b"))
    dead = f"http://user:s3cret-pw@127.0.0.1:{closed_port()}"
    good = ForwardProxy()
    async with running(good) as [good_url]:
        overrides = (static("proxy.pool", dead, good_url), 'proxy.pool.policy={name = "round_robin"}')
        result = await builder.set(*overrides).spider(Fetch(server.url("/a"), server.url("/b"))).run_async()
    assert result.ok, result.failures
    assert result.stats.proxy_failures == {dead.replace("s3cret-pw", "***"): 1}  # then cooled down
    assert result.stats.retries == 0  # tried again through the other proxy, within the attempt
    assert len(good.seen) == 2


async def test_fixed_proxy_failures_are_counted_and_shown(builder: MocraBuilder, server: LocalServer) -> None:
    import io

    from mocra._run import print_summary

    server.route("/a", ServerResponse(body="a"))
    dead = f"http://user:s3cret-pw@127.0.0.1:{closed_port()}"
    result = (
        await builder.set(f"proxy.url={dead}", "retry.max_retries=1")
        .spider(Fetch(server.url("/a")))
        .run_async()
    )
    redacted = dead.replace("s3cret-pw", "***")
    assert result.stats.proxy_failures == {redacted: 2}  # the attempt and its one retry
    out = io.StringIO()
    print_summary(result, out)
    assert f"proxy failures 2: {redacted} 2" in out.getvalue()
    assert "s3cret-pw" not in out.getvalue()


def test_named_pools_are_checked_in_the_settings() -> None:
    pool = {"sources": [{"type": "static", "urls": ["http://10.0.0.1:8080"]}]}
    settings = Settings.from_mapping({"proxy": {"pool": pool, "pools": {"dc": pool}}})
    assert settings.proxy.pool_names == {"pool", "dc"}
    with pytest.raises(ConfigError, match=r"<code>: proxy\.pools: '1st' is not a pool name"):
        Settings.from_mapping({"proxy": {"pools": {"1st": pool}}})
    with pytest.raises(ConfigError, match=r"proxy\.pools: 'direct' means no proxy"):
        Settings.from_mapping({"proxy": {"pools": {"direct": pool}}})
    with pytest.raises(ConfigError, match=r"proxy\.pools: 'pool' is the name of \[proxy.pool\]"):
        Settings.from_mapping({"proxy": {"pool": pool, "pools": {"pool": pool}}})
    with pytest.raises(ConfigError, match=r"proxy\.pools\.dc: max_errorz: Object contains unknown field"):
        Settings.from_mapping({"proxy": {"pools": {"dc": {**pool, "max_errorz": 3}}}})


class MetaUrl(Fetch):
    """Seeds one request whose meta names a proxy URL."""

    name = "meta-url"

    def __init__(self, url: str, proxy: str) -> None:
        super().__init__()
        self.url, self.via = url, proxy

    async def start(self, seeds: Seeds) -> None:
        seeds.add(Request(self.url, meta={"proxy": self.via}))


async def test_a_requests_proxy_url_is_honoured_without_proxy_settings(
    builder: MocraBuilder, server: LocalServer
) -> None:
    server.route("/a", ServerResponse(body="a"))
    fixed = ForwardProxy()
    async with running(fixed) as [url]:
        result = await builder.spider(MetaUrl(server.url("/a"), url)).run_async()
    assert result.ok, result.failures
    assert [seen.target for seen in fixed.seen] == [server.url("/a")]  # once sent directly, ignoring meta


async def test_the_runs_view_shows_each_pools_counts_and_metrics_render_them(
    builder: MocraBuilder, server: LocalServer
) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    from mocra_core.control import JobRegistry
    from mocra_core.observe import scrape

    server.route("/a", ServerResponse(body="a"))
    one, two = ForwardProxy(), ForwardProxy()
    registry = JobRegistry()
    async with running(one, two) as [one_url, two_url]:
        overrides = (static("proxy.pool", one_url), static("proxy.pools.residential", two_url))
        result = await builder.set(*overrides).registry(registry).spider(Fetch(server.url("/a"))).run_async()
    assert result.ok, result.failures
    (view,) = registry.views()
    pools = view.proxy_pools()  # type: ignore[attr-defined]
    assert sorted(pools) == ["pool", "residential"]
    assert pools["pool"].proxies == 1
    text = (await scrape(registry.views())).decode()
    samples = {
        (sample.name, sample.labels.get("pool"))
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }
    assert ("mocra_proxy_pool_proxies", "residential") in samples
