"""Every numeric setting has a rule checked at start; errors name the key, the rule and the value's source."""

from __future__ import annotations

import math
import pathlib
import types
import typing

import msgspec
import pytest

from mocra_core import ConfigError, Mocra, Settings
from mocra_core.config import load

# (key, value) -> the words of the owner's docstring that give the value its meaning
ALLOWED: dict[tuple[str, float], str] = {
    ("crawl.per_domain_delay", 0): "(0 = none)",
    ("crawl.max_depth", 0): "(0 = the seeds only",
    ("download.autothrottle.start_delay", 0): "(0 = none: `crawl.per_domain_delay`)",
    ("download.max_redirects", 0): "0 returns the 3xx response as is",
    ("retry.max_retries", 0): "Retries after the first attempt",
    ("retry.base", 0): "drawn uniformly from [0, `base` * 2^(n-1)]",
    ("retry.max_delay", 0): "Cap on that backoff",
    ("retry.max_retry_after", 0): "Cap on a server's `Retry-After`",
    ("retry.max_domain_backoff", 0): "0 never slows a domain for its responses",
    ("sink.max_retries", 0): "(0 = dead-lettered at the first failure)",
    ("sink.retry_delay", 0): "(0 = at once)",
    ("queue.kafka.lanes", 0): "lanes: Priority lanes",
    ("queue.kafka.lanes", -1): "lanes: Priority lanes",
    ("http_cache.expiration", 0): "(0 = never expires)",
}


def _numeric(annotation: object) -> tuple[type, bool] | None:
    """(int or float, whether it is a collection of them) for a numeric field's type, else None."""
    args = typing.get_args(annotation)
    if annotation in (int, float):
        return annotation, False  # type: ignore[return-value]
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        inner = [a for a in args if a is not type(None)]
        return _numeric(inner[0]) if len(inner) == 1 else None
    if typing.get_origin(annotation) in (frozenset, set, tuple, list) and args and args[0] in (int, float):
        return args[0], True
    return None


def numeric_settings(
    struct: type[msgspec.Struct] = Settings, prefix: str = ""
) -> list[tuple[str, type, bool, type[msgspec.Struct]]]:
    """Every numeric field under `struct`, found by introspection: (key path, type, is collection, owner)."""
    found = []
    for field in msgspec.structs.fields(struct):
        key = f"{prefix}{field.name}"
        if isinstance(field.type, type) and issubclass(field.type, msgspec.Struct):
            found += numeric_settings(field.type, f"{key}.")
        elif (kind := _numeric(field.type)) is not None:
            found.append((key, *kind, struct))
    return found


def test_the_walk_finds_the_settings_of_every_section() -> None:
    keys = {key for key, *_ in numeric_settings()}
    assert {
        "crawl.concurrency",
        "download.max_body_bytes",
        "retry.statuses",
        "queue.visibility_timeout",
    } <= keys
    assert {
        "queue.redis.reconnect_timeout",
        "queue.kafka.lanes",
        "queue.nats.timeout",
        "sink.batch_size",
    } <= keys


CASES = [
    pytest.param(key, kind, many, owner, value, id=f"{key}={value}")
    for key, kind, many, owner in numeric_settings()
    for value in (0, -1, *((math.nan,) if kind is float else ()))
]


@pytest.mark.parametrize(("key", "kind", "many", "owner", "value"), CASES)
def test_every_numeric_setting_rejects_0_and_minus_1_or_gives_them_a_documented_meaning(
    key: str, kind: type, many: bool, owner: type[msgspec.Struct], value: float
) -> None:
    literal = "nan" if math.isnan(value) else str(kind(value))
    text = f"{key}=[{literal}]" if many else f"{key}={literal}"
    meaning = ALLOWED.get((key, value))
    if meaning is not None:
        load(None, overrides=[text], environ={})
        assert meaning in (owner.__doc__ or ""), (
            f"{key}={literal} is allowed but its meaning is not documented"
        )
        return
    with pytest.raises(ConfigError) as info:
        load(None, overrides=[text], environ={})
    assert info.value.key == key
    assert info.value.source == f"-s {text}"
    assert str(info.value).startswith(f"-s {text}: {key}: ")
    problem = str(info.value).removeprefix(f"-s {text}: {key}: ")
    assert problem.startswith(("must be", "not HTTP statuses")), problem
    assert "got" in problem or "statuses" in problem


def test_a_clear_error_instead_of_a_late_crash() -> None:
    with pytest.raises(ConfigError) as info:
        load(None, overrides=["sink.batch_size=0"], environ={})
    assert str(info.value) == "-s sink.batch_size=0: sink.batch_size: must be at least 1, got 0"


def test_max_pages_0_is_refused_saying_how_to_mean_no_limit() -> None:
    with pytest.raises(ConfigError) as info:
        load(None, overrides=["crawl.max_pages=0"], environ={})
    assert str(info.value) == (
        "-s crawl.max_pages=0: crawl.max_pages: must be at least 1 (leave it unset for no limit), got 0"
    )


@pytest.mark.parametrize(
    ("key", "url", "problem"),
    [
        ("queue.url", "garbage://x", "unknown scheme 'garbage'; expected memory, lmdb, redis, nats or kafka"),
        (
            "queue.url",
            "127.0.0.1:6379",
            "expected scheme://…, e.g. redis://127.0.0.1:6379/0, got '127.0.0.1:6379'",
        ),
        ("queue.url", "lmdb://", "lmdb:// needs a directory, e.g. lmdb:///var/crawl/queue"),
        ("coordination.url", "garbage://x", "unknown scheme 'garbage'; expected memory, lmdb or redis"),
        (
            "coordination.url",
            "nats://127.0.0.1:4222",
            "unknown scheme 'nats'; expected memory, lmdb or redis",
        ),
    ],
)
def test_an_unknown_url_scheme_fails_at_start(key: str, url: str, problem: str) -> None:
    with pytest.raises(ConfigError) as info:
        load(None, overrides=[f'{key}="{url}"'], environ={})
    assert info.value.key == key
    assert str(info.value).endswith(f": {key}: {problem}")


def test_the_known_url_schemes_are_accepted() -> None:
    for url in (
        "memory://",
        "lmdb:///tmp/q",
        "redis://h:6379/0",
        "rediss://h",
        "nats://h:4222",
        "kafka://h:9092",
    ):
        assert load(None, overrides=[f'queue.url="{url}"'], environ={}).queue.url == url
    for url in ("memory://", "lmdb:///tmp/c", "redis://h:6379/0", "rediss://h"):
        assert load(None, overrides=[f'coordination.url="{url}"'], environ={}).coordination.url == url


@pytest.mark.parametrize(
    ("file_text", "environ", "overrides", "source", "key"),
    [
        (
            "[sink]\nbatch_size = 0",
            {"MOCRA_CRAWL__DEDUP": "false"},
            ["crawl.dedup=false"],
            "FILE",
            "sink.batch_size",
        ),
        (
            "[sink]\nbatch_size = 5",
            {"MOCRA_SINK__BATCH_SIZE": "0"},
            [],
            "MOCRA_SINK__BATCH_SIZE",
            "sink.batch_size",
        ),
        (
            "[sink]\nbatch_size = 5",
            {"MOCRA_CRAWL__DEDUP": "false"},
            ["sink.batch_size=0"],
            "-s sink.batch_size=0",
            "sink.batch_size",
        ),
        ("[crawl]\nconcurency = 4", {"MOCRA_SINK__BATCH_SIZE": "8"}, [], "FILE", "crawl.concurency"),
        ("[crawl]\nconcurrency = 'x'", {"MOCRA_SINK__BATCH_SIZE": "8"}, [], "FILE", "crawl.concurrency"),
    ],
)
def test_the_error_names_where_the_bad_value_came_from(
    tmp_path: pathlib.Path,
    file_text: str,
    environ: dict[str, str],
    overrides: list[str],
    source: str,
    key: str,
) -> None:
    path = tmp_path / "settings.toml"
    path.write_text(file_text)
    with pytest.raises(ConfigError) as info:
        load(str(path), overrides=overrides, environ=environ)
    expected = str(path) if source == "FILE" else source
    assert (info.value.source, info.value.key) == (expected, key)
    assert str(info.value).startswith(f"{expected}: {key}: ")


def test_an_unknown_key_suggests_the_one_meant(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text("[crawl]\nconcurency = 4\n")
    with pytest.raises(ConfigError) as info:
        load(str(path), overrides=[], environ={})
    assert str(info.value) == f"{path}: crawl.concurency: unknown key; did you mean concurrency?"


def test_from_toml_names_the_file(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MOCRA_CRAWL__CONCURRENCY", "8")
    path = tmp_path / "settings.toml"
    path.write_text("[queue]\nvisibility_timeout = 0\n")
    with pytest.raises(ConfigError) as info:
        Settings.from_toml(str(path))
    assert str(info.value) == f"{path}: queue.visibility_timeout: must be > 0, got 0.0"


def test_an_override_of_a_whole_section_is_named(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ConfigError) as info:
        load(None, overrides=["queue.kafka={partitions = 0}"], environ={})
    assert str(info.value).startswith(
        "-s queue.kafka={partitions = 0}: queue.kafka.partitions: must be at least 1"
    )


def test_builder_set_names_the_call() -> None:
    builder = Mocra.builder().set("crawl.concurrency=8", "queue.max_attempts=0")
    with pytest.raises(ConfigError) as info:
        builder.build_settings()
    assert str(info.value) == (
        "builder.set('queue.max_attempts=0'): queue.max_attempts: must be at least 1, got 0"
    )


def test_from_mapping_names_its_source() -> None:
    with pytest.raises(ConfigError) as info:
        Settings.from_mapping({"sink": {"max_retries": -1}}, source="app.yaml")
    assert str(info.value) == "app.yaml: sink.max_retries: must be at least 0, got -1"
