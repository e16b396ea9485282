"""The code in docs/proxies.md runs: its TOML is valid settings (and pool config), its spider compiles."""

from __future__ import annotations

import pathlib
import re
from typing import Any

from mocra_core.config import Settings
from mocra_core.modules import compile_module
from mocra_proxy import ProxyPoolConfig

DOC = pathlib.Path(__file__).parents[3] / "docs" / "proxies.md"
TEXT = DOC.read_text()


def test_the_toml_block_is_valid_settings_and_pool_config(tmp_path: pathlib.Path) -> None:
    block, _ = re.findall(r"```toml\n(.*?)```", TEXT, flags=re.S)
    path = tmp_path / "mocra.toml"
    path.write_text(block)
    settings = Settings.from_toml(str(path))
    assert settings.proxy.state == "redis"
    config = ProxyPoolConfig.from_mapping(dict(settings.proxy.pool))
    assert [type(source).__name__ for source in config.sources_built()] == ["StaticSource", "ProviderSource"]


def test_the_named_pools_block_is_valid_settings(tmp_path: pathlib.Path) -> None:
    _, block = re.findall(r"```toml\n(.*?)```", TEXT, flags=re.S)
    path = tmp_path / "mocra.toml"
    path.write_text(block)
    settings = Settings.from_toml(str(path))
    assert settings.proxy.pool_names == {"pool", "residential"}
    config = ProxyPoolConfig.from_mapping(dict(settings.proxy.pools["residential"]))
    assert [type(source).__name__ for source in config.sources_built()] == ["TunnelSource"]


def test_the_spider_block_compiles() -> None:
    (code,) = re.findall(r"```python\n(.*?)```", TEXT, flags=re.S)
    namespace: dict[str, Any] = {"__name__": "docs_proxies"}
    exec(compile(code, str(DOC), "exec"), namespace)
    compiled = compile_module(namespace["Mixed"]())
    assert (compiled.name, compiled.proxy) == ("mixed", "residential")
