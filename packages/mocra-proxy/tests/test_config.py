"""ProxyPoolConfig: TOML and mappings, errors naming file and key path, built sources, no secrets shown."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from mocra_proxy import (
    FileSource,
    Limits,
    ProviderSource,
    ProxyConfigError,
    ProxyHealth,
    ProxyPool,
    ProxyPoolConfig,
    RandomPolicy,
    RoundRobinPolicy,
    ScorePolicy,
    StaticSource,
    TunnelSource,
)

if TYPE_CHECKING:
    import pathlib

    from conftest import Origin

TOML = """\
ban_statuses = [403, 429]
max_errors = 3
cooldown = 2.0
refill_below = 4

[policy]
name = "round_robin"

[limits]
rate = 2.0
domain_concurrency = 1

[health_check]
url = "http://127.0.0.1:9/health"
interval = 30.0

[[sources]]
type = "static"
urls = ["http://alice:hunter2@10.0.0.1:8080"]

[[sources]]
type = "file"
path = "proxies.txt"
tier = 1

[[sources]]
type = "provider"
url = "https://api.example.com/list?key=apikey123"
format = "json"
fields = { host = "ip" }
min_interval = 5.0
ttl = 600.0
weight = 2.0

[[sources]]
type = "tunnel"
gateway = "http://cust:tunnelpw@gw.example.net:22225"
sessions = 2
tier = 2
"""


def test_from_toml_builds_sources_and_pool_options(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "proxy.toml"
    path.write_text(TOML)
    config = ProxyPoolConfig.from_toml(path)
    sources = config.sources_built()
    assert [type(s) for s in sources] == [StaticSource, FileSource, ProviderSource, TunnelSource]
    file_source = sources[1]
    assert isinstance(file_source, FileSource) and str(file_source.path) == str(tmp_path / "proxies.txt")
    provider = sources[2]
    assert isinstance(provider, ProviderSource)
    assert (provider.weight, provider.min_interval, provider.ttl, provider.fields["host"]) == (
        2.0,
        5.0,
        600.0,
        "ip",
    )
    options = config.pool_options()
    assert isinstance(options["policy"], RoundRobinPolicy)
    assert options["ban_statuses"] == (403, 429)
    assert (options["max_errors"], options["cooldown"], options["refill_below"]) == (3, 2.0, 4)
    assert options["limits"] == Limits(rate=2.0, domain_concurrency=1)
    assert options["health_check"] is not None and options["health_check"].interval == 30.0


def test_defaults() -> None:
    config = ProxyPoolConfig.from_mapping({})
    options = config.pool_options()
    assert isinstance(options["policy"], ScorePolicy)
    assert options["ban_statuses"] == (403, 407, 429)
    assert (options["max_errors"], options["health_check"], config.sources) == (5, None, ())


def test_random_policy_with_a_seed_repeats() -> None:
    config = ProxyPoolConfig.from_mapping({"policy": {"name": "random", "seed": 7}})
    policy = config.pool_options()["policy"]
    assert isinstance(policy, RandomPolicy)
    candidates = [ProxyHealth() for _ in range(5)]
    first = [policy.choose(candidates, 0.0) for _ in range(10)]
    again = config.pool_options()["policy"]
    assert [again.choose(candidates, 0.0) for _ in range(10)] == first


def test_credentials_never_in_the_config_repr(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "proxy.toml"
    path.write_text(TOML)
    text = repr(ProxyPoolConfig.from_toml(path))
    assert "alice:***@" in text and "cust:***@" in text and "key=***" in text
    for secret in ("hunter2", "apikey123", "tunnelpw"):
        assert secret not in text


@pytest.mark.parametrize(
    ("toml", "key", "problem"),
    [
        ("max_erors = 3\n", "$.max_erors", "unknown field `max_erors`"),
        ("[limits]\nrate = 'fast'\n", "$.limits.rate", "Expected `float | null`, got `str`"),
        ("[limits]\nburst = 2\n", "$.limits.burst", "unknown field `burst`"),
        ("[[sources]]\ntype = 'ftp'\n", "$.sources[0].type", "Invalid value 'ftp'"),
        ("[[sources]]\ntype = 'file'\npath = 'x'\ntier = 'a'\n", "$.sources[0].tier", "Expected `int`"),
        ("[[sources]]\ntype = 'provider'\n", "$.sources[0]", "missing required field `url`"),
        ("[policy]\nname = 'fastest'\n", "$.policy.name", "Invalid value 'fastest'"),
        ("[limits]\nrate = -1.0\n", "$.limits", "must be positive"),
    ],
)
def test_errors_name_the_file_and_the_key(tmp_path: pathlib.Path, toml: str, key: str, problem: str) -> None:
    path = tmp_path / "proxy.toml"
    path.write_text(toml)
    with pytest.raises(ProxyConfigError) as caught:
        ProxyPoolConfig.from_toml(path)
    assert (caught.value.key, caught.value.source) == (key, str(path))
    assert str(caught.value).startswith(f"{path}: {key}: ")
    assert problem in str(caught.value)


@pytest.mark.parametrize(
    ("source", "secret"),
    [
        ({"type": "static", "urls": ["ftp://u:hunter2@10.0.0.1:21"]}, "hunter2"),
        (
            {
                "type": "tunnel",
                "gateway": "http://c:tunnelpw@gw:1",
                "sessions": 2,
                "session_format": "{username}",
            },
            "",
        ),
        ({"type": "tunnel", "gateway": "http://c:tunnelpw@gw"}, "tunnelpw"),
        ({"type": "provider", "url": "http://x/", "fields": {"ip": "host"}}, ""),
    ],
)
def test_bad_source_values_are_named_without_secrets(source: dict[str, object], secret: str) -> None:
    with pytest.raises(ProxyConfigError) as caught:
        ProxyPoolConfig.from_mapping({"sources": [source]}, source="settings")
    assert caught.value.key == "$.sources[0]"
    assert str(caught.value).startswith("settings: $.sources[0]: ")
    assert "tunnelpw" not in str(caught.value) and "hunter2" not in str(caught.value)
    assert secret == "" or secret not in str(caught.value)


def test_not_toml_and_missing_file(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "proxy.toml"
    path.write_text("sources = [\n")
    with pytest.raises(ProxyConfigError, match=r"proxy.toml: \$: not TOML"):
        ProxyPoolConfig.from_toml(path)
    with pytest.raises(ProxyConfigError, match=r"absent.toml: \$: cannot read: FileNotFoundError"):
        ProxyPoolConfig.from_toml(tmp_path / "absent.toml")


@pytest.mark.anyio
async def test_a_pool_runs_from_config(origin: Origin, tmp_path: pathlib.Path) -> None:
    url = origin.route("/list", "10.0.0.1:8080:u:pw\n")
    config = ProxyPoolConfig.from_mapping({"sources": [{"type": "provider", "url": url}], "max_errors": 2})
    async with ProxyPool(config.sources_built(), **config.pool_options()) as pool:
        async with pool.lease(domain="example.com") as lease:
            assert lease.proxy.redacted == "http://u:***@10.0.0.1:8080"
            await lease.ok(200)
    assert origin.hits["/list"] >= 1
