"""`crawl.scope`: the default scope strategy of a crawl, from TOML, environment or overrides."""

from __future__ import annotations

import pathlib

import pytest

from mocra_core import ConfigError, Settings
from mocra_core.config import load


def test_the_default_scope_is_the_seed_s_registrable_domain() -> None:
    assert Settings().crawl.scope == "same-domain"


@pytest.mark.parametrize("strategy", ["all", "same-hostname", "same-domain", "same-origin"])
def test_each_strategy_loads_from_toml(tmp_path: pathlib.Path, strategy: str) -> None:
    path = tmp_path / "mocra.toml"
    path.write_text(f'[crawl]\nscope = "{strategy}"\n')
    assert load(str(path), overrides=[], environ={}).crawl.scope == strategy


def test_the_environment_and_an_override_set_it() -> None:
    env = {"MOCRA_CRAWL__SCOPE": "same-origin"}
    assert load(None, overrides=[], environ=env).crawl.scope == "same-origin"
    assert load(None, overrides=['crawl.scope="all"'], environ=env).crawl.scope == "all"


def test_an_unknown_strategy_names_the_key_and_the_file(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "mocra.toml"
    path.write_text('[crawl]\nscope = "same-site"\n')
    with pytest.raises(ConfigError) as info:
        load(str(path), overrides=[], environ={})
    assert "crawl.scope" in str(info.value) and "'same-site'" in str(info.value)
    assert str(path) in str(info.value)
