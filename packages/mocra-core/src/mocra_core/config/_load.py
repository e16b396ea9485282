"""Merge settings from TOML, `MOCRA_*` environment variables and `-s key=value`, then validate once."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from .._errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ._settings import Settings

__all__ = ("convert", "load", "parse_override")

ENV_PREFIX = "MOCRA_"
_PATH_IN_ERROR = re.compile(r" - at `\$\.?(?P<path>[^`]*)`$")


def parse_override(text: str, *, source: str = "-s") -> tuple[list[str], Any]:
    """Split `section.key=value` into a key path and a value parsed as a TOML literal (else a string).

    Example:
        >>> parse_override("crawl.concurrency=8")
        (['crawl', 'concurrency'], 8)
        >>> parse_override("queue.url=memory://")
        (['queue', 'url'], 'memory://')
    """
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(text, "expected key=value, e.g. crawl.concurrency=8", source=source)
    try:
        value = msgspec.toml.decode(f"v = {raw.strip()}")["v"]
    except msgspec.DecodeError:
        value = raw.strip()
    return key.split("."), value


def _env_overrides(environ: Mapping[str, str]) -> list[tuple[str, list[str], Any]]:
    found = []
    for name, raw in sorted(environ.items()):
        if not name.startswith(ENV_PREFIX) or name in _NOT_SETTINGS:
            continue
        path = [part.lower() for part in name[len(ENV_PREFIX) :].split("__")]
        _, value = parse_override(f"x={raw}")
        found.append((name, path, value))
    return found


# Variables with the prefix that are not settings (read elsewhere, e.g. by the cluster config).
_NOT_SETTINGS = frozenset(
    {"MOCRA_NODE_ID", "MOCRA_CLUSTER_ADDR", "MOCRA_DATA_DIR", "MOCRA_SEEDS", "MOCRA_CLUSTER_PASSWORD"}
)


def _set_path(data: dict[str, Any], path: list[str], value: Any, *, source: str) -> None:
    node = data
    for part in path[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(".".join(path), f"{part!r} is not a section", source=source)
        node = child
    node[path[-1]] = value


def convert(data: Mapping[str, Any], *, source: str) -> Settings:
    """Validate `data` into `Settings`; errors name the key path and the source."""
    from ._settings import Settings

    try:
        return msgspec.convert(data, Settings)
    except (msgspec.ValidationError, ValueError, TypeError) as exc:
        message = str(exc)
        match = _PATH_IN_ERROR.search(message)
        key = match.group("path").replace("[", ".").replace("]", "") if match else "settings"
        problem = _PATH_IN_ERROR.sub("", message)
        raise ConfigError(key or "settings", problem, source=source) from None


def load(path: str | None, *, overrides: list[str], environ: Mapping[str, str] | None = None) -> Settings:
    """Read `path` (TOML, optional), apply `MOCRA_*` variables, then `key=value` overrides; validate once.

    Raises:
        ConfigError: the file cannot be read or parsed, or a key or value is invalid.
    """
    data: dict[str, Any] = {}
    source = "<defaults>"
    if path is not None:
        source = path
        try:
            data = msgspec.toml.decode(Path(path).read_bytes())
        except FileNotFoundError:
            raise ConfigError("config", "file not found", source=path) from None
        except msgspec.DecodeError as exc:
            raise ConfigError("config", f"not valid TOML: {exc}", source=path) from None
    for name, key_path, value in _env_overrides(os.environ if environ is None else environ):
        _set_path(data, key_path, value, source=name)
        source = f"{source} + {name}"
    for text in overrides:
        key_path, value = parse_override(text)
        _set_path(data, key_path, value, source=f"-s {text}")
        source = f"{source} + -s {text}"
    return convert(data, source=source)
