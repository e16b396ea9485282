"""`[proxy]`: a fixed URL and a pool checked by mocra-proxy's config, from TOML, `-s` and `MOCRA_*`."""

from __future__ import annotations

from pathlib import Path

import pytest

from mocra_core import ConfigError
from mocra_core.config import ProxySettings, Settings, load

POOL_TOML = """
[proxy]
url = "http://u:pw@10.0.0.9:8080"

[proxy.pool]
max_errors = 3
ban_statuses = [403, 429]

[[proxy.pool.sources]]
type = "static"
urls = ["http://u:pw@10.0.0.1:8080", "http://10.0.0.2:8080"]

[proxy.pool.policy]
name = "round_robin"
"""


def test_no_proxy_by_default() -> None:
    assert Settings().proxy == ProxySettings(url=None, pool={})


def test_a_pool_and_a_url_from_toml(tmp_path: Path) -> None:
    path = tmp_path / "mocra.toml"
    path.write_text(POOL_TOML)
    proxy = load(str(path), overrides=[], environ={}).proxy
    assert proxy.url == "http://u:pw@10.0.0.9:8080"
    assert proxy.pool["max_errors"] == 3
    assert proxy.pool["sources"][0]["urls"][1] == "http://10.0.0.2:8080"


def test_overrides_reach_into_the_pool(tmp_path: Path) -> None:
    path = tmp_path / "mocra.toml"
    path.write_text(POOL_TOML)
    overrides = [
        "proxy.pool.max_errors=7",
        'proxy.pool.sources=[{type = "static", urls = ["http://10.0.0.3:3128"]}]',
    ]
    proxy = load(str(path), overrides=overrides, environ={"MOCRA_PROXY__URL": "http://10.0.0.4:1"}).proxy
    assert proxy.pool["max_errors"] == 7
    assert proxy.pool["sources"] == [{"type": "static", "urls": ["http://10.0.0.3:3128"]}]
    assert proxy.pool["policy"] == {"name": "round_robin"}
    assert proxy.url == "http://10.0.0.4:1"


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("proxy.pool.max_errorz=3", "-s proxy.pool.max_errorz=3: proxy.pool: max_errorz: Object contains"),
        ("proxy.pool.cooldown=soon", "-s proxy.pool.cooldown=soon: proxy.pool: cooldown: Expected `float`"),
        (
            'proxy.pool.sources=[{type = "static", urls = ["http://h:1"], tier = "a"}]',
            "proxy.pool: sources[0].tier: Expected `int`, got `str`",
        ),
        ("proxy.url=ftp://h:21", "-s proxy.url=ftp://h:21: proxy.url: unknown scheme 'ftp'"),
        ("proxy.urll=http://h:1", "proxy.urll: unknown key; did you mean url?"),
        ("proxy.state=disk", "-s proxy.state=disk: proxy.state: expected scheme://…, e.g. redis://"),
        ("proxy.state=nats://h:4222", "proxy.state: unknown scheme 'nats'; expected redis"),
    ],
)
def test_errors_name_the_key_and_the_source(override: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load(None, overrides=[override], environ={})
    assert message in str(caught.value)


BAD = '[{type = "static", urls = ["http://u:s3cret@h"]}]'  # no port


def test_credentials_in_a_bad_pool_source_are_not_echoed() -> None:
    with pytest.raises(ConfigError) as caught:
        load(None, overrides=[f"proxy.pool.sources={BAD}"], environ={})
    assert "s3cret" not in str(caught.value)
    assert "proxy.pool: sources[0]: proxy 'http://u:***@h': no port" in str(caught.value)
