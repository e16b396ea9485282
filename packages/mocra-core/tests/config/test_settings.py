"""Settings: defaults, TOML, environment, overrides, and errors that name the key and the source."""

from __future__ import annotations

import pathlib

import msgspec
import pytest

from mocra_core import ConfigError, Settings
from mocra_core.config import load

DOCS = pathlib.Path(__file__).resolve().parents[4] / "docs" / "settings.md"


def test_defaults_need_nothing() -> None:
    settings = Settings()
    assert settings.crawl.concurrency == 64
    assert settings.crawl.obey_robots is True
    assert settings.queue.url == "memory://"


def test_toml_env_and_overrides_merge_in_order(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "mocra.toml"
    path.write_text("[crawl]\nconcurrency = 4\nper_domain_delay = 0.5\n[retry]\nstatuses = [503]\n")
    env = {"MOCRA_CRAWL__CONCURRENCY": "8", "MOCRA_CRAWL__OBEY_ROBOTS": "false", "HOME": "/root"}

    settings = load(str(path), overrides=["crawl.concurrency=16"], environ=env)

    assert settings.crawl.concurrency == 16
    assert settings.crawl.per_domain_delay == 0.5
    assert settings.crawl.obey_robots is False
    assert settings.retry.statuses == frozenset({503})


def test_unknown_key_names_the_key_and_the_file(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "mocra.toml"
    path.write_text("[crawl]\nconcurency = 4\n")
    with pytest.raises(ConfigError) as info:
        load(str(path), overrides=[], environ={})
    assert "concurency" in str(info.value)
    assert str(path) in str(info.value)


def test_wrong_type_names_the_key_path() -> None:
    with pytest.raises(ConfigError) as info:
        load(None, overrides=["crawl.concurrency=many"], environ={})
    assert info.value.key == "crawl.concurrency"
    assert "-s crawl.concurrency=many" in str(info.value)


def test_invalid_value_is_rejected_with_its_field() -> None:
    with pytest.raises(ConfigError) as info:
        load(None, overrides=["crawl.concurrency=0"], environ={})
    assert str(info.value) == "-s crawl.concurrency=0: crawl.concurrency: must be at least 1, got 0"


def test_bad_environment_variable_is_named() -> None:
    with pytest.raises(ConfigError) as info:
        load(None, overrides=[], environ={"MOCRA_CRAWL__TYPO": "1"})
    assert "MOCRA_CRAWL__TYPO" in str(info.value)
    assert "typo" in str(info.value)


def test_malformed_toml_and_missing_file(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("[crawl\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load(str(path), overrides=[], environ={})
    with pytest.raises(ConfigError, match="file not found"):
        load(str(tmp_path / "nope.toml"), overrides=[], environ={})


def test_malformed_override() -> None:
    with pytest.raises(ConfigError, match="expected key=value"):
        load(None, overrides=["crawl.concurrency"], environ={})


def test_every_setting_is_documented() -> None:
    text = DOCS.read_text()
    sections: list[tuple[str, msgspec.Struct]] = [("", Settings())]
    while sections:
        name, struct = sections.pop()
        if name:
            assert f"`[{name}]`" in text, f"section [{name}] is not in docs/settings.md"
        for field, value in msgspec.structs.asdict(struct).items():
            if isinstance(value, msgspec.Struct):
                sections.append((f"{name}.{field}".lstrip("."), value))
            else:
                assert f"| `{field}` |" in text, f"{name}.{field} is not in docs/settings.md"
