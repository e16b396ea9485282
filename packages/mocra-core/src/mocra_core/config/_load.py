"""Merge settings from TOML, `MOCRA_*` environment variables and `-s key=value`, then validate once.

Every value remembers where it came from (the file, the variable, the `-s`, the command-line option or the
`builder.set` call), so an invalid one is reported with its key, the rule it breaks and that source.
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from .._errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from ._settings import Settings

__all__ = ("SettingsLayers", "convert", "load", "parse_override")

ENV_PREFIX = "MOCRA_"
_PATH_IN_ERROR = re.compile(r" - at `\$\.?(?P<path>[^`]*)`$")
_FIELD_PROBLEM = re.compile(
    r"^(?P<field>[a-z_][a-z0-9_]*)(?P<below>(?:\.[A-Za-z][A-Za-z0-9_-]*)*): (?P<problem>.*)$", re.S
)  # `field: problem`, or `field.name: problem` for an entry of a mapping field (`pools.dc: ...`)
_UNKNOWN_FIELD = re.compile(r"^Object contains unknown field `(?P<field>[^`]*)`$")
_PASSWORD_IN_URL = re.compile(r"(?P<user>://[^:/@\s\"']*:)[^@\s\"']*@")


def _redact_text(text: str) -> str:
    """`text` with the password of every URL in it replaced by `***` (for `-s` labels in errors).

    Example:
        >>> _redact_text('proxy.pool.sources=[{urls = ["http://u:pw@h:1"]}]')
        'proxy.pool.sources=[{urls = ["http://u:***@h:1"]}]'
    """
    return _PASSWORD_IN_URL.sub(r"\g<user>***@", text)


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


# Variables with the prefix that are not settings (read elsewhere, e.g. by the cluster config).
_NOT_SETTINGS = frozenset(
    {
        "MOCRA_NODE_ID",
        "MOCRA_CLUSTER_ADDR",
        "MOCRA_DATA_DIR",
        "MOCRA_SEEDS",
        "MOCRA_CLUSTER_PASSWORD",
        "MOCRA_ADMIN_KEYS",  # read by the admin server: comma-separated keys
    }
)


class SettingsLayers:
    """A settings mapping merged layer by layer, remembering the source of every value.

    Example:
        >>> layers = SettingsLayers()
        >>> layers.set(["sink", "batch_size"], 0, source="-s sink.batch_size=0")
        >>> layers.convert(source="<defaults>")
        Traceback (most recent call last):
        ...
        mocra_core._errors.ConfigError: -s sink.batch_size=0: sink.batch_size: must be at least 1, got 0
    """

    def __init__(self, data: dict[str, Any] | None = None) -> None:
        self.data: dict[str, Any] = data if data is not None else {}
        self.sources: dict[tuple[str, ...], str] = {}

    def set(self, path: Sequence[str], value: Any, *, source: str) -> None:
        """Set the value at `path` (creating sections), replacing what was there and where it came from."""
        node = self.data
        for part in path[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(".".join(path), f"{part!r} is not a section", source=source)
            node = child
        node[path[-1]] = value
        key = tuple(path)
        for known in [k for k in self.sources if k[: len(key)] == key]:
            del self.sources[known]
        self.sources[key] = source

    def add(self, data: Mapping[str, Any], *, source: str, prefix: tuple[str, ...] = ()) -> None:
        """Merge a nested mapping (a TOML file) into the settings, each of its values from `source`."""
        for name, value in data.items():
            if isinstance(value, dict):
                self.add(value, source=source, prefix=(*prefix, name))
            else:
                self.set([*prefix, name], value, source=source)

    def convert(self, *, source: str) -> Settings:
        """Validate into `Settings`; an error names the key, the rule and the source of its value.

        Args:
            source: Named when the bad value has no recorded source (a default).
        """
        return convert(self.data, source=source, sources=self.sources)


def _env_overrides(environ: Mapping[str, str]) -> list[tuple[str, list[str], Any]]:
    found = []
    for name, raw in sorted(environ.items()):
        if not name.startswith(ENV_PREFIX) or name in _NOT_SETTINGS:
            continue
        path = [part.lower() for part in name[len(ENV_PREFIX) :].split("__")]
        _, value = parse_override(f"x={raw}")
        found.append((name, path, value))
    return found


def _section(key: list[str]) -> type[msgspec.Struct] | None:
    """The settings Struct at `key` (`[]`: `Settings`), or None when `key` is not a section."""
    from ._settings import Settings

    struct: type[msgspec.Struct] = Settings
    for part in key:
        field = {f.name: f.type for f in msgspec.structs.fields(struct)}.get(part)
        if not (isinstance(field, type) and issubclass(field, msgspec.Struct)):
            return None
        struct = field
    return struct


def _locate(message: str) -> tuple[list[str], str]:
    """The key path and the problem of a msgspec error message, down to the field a check names."""
    match = _PATH_IN_ERROR.search(message)
    path, _, item = (match.group("path") if match else "").partition("[")
    key = [part for part in path.split(".") if part]
    problem = _PATH_IN_ERROR.sub("", message)
    if item:
        return key, f"{problem} (item [{item})"
    section = _section(key)
    names = [f.name for f in msgspec.structs.fields(section)] if section is not None else []
    if (unknown := _UNKNOWN_FIELD.match(problem)) is not None:
        field = unknown.group("field")
        close = difflib.get_close_matches(field, names, n=1)
        where = f"[{'.'.join(key)}]" if key else "the top level"
        hint = f"did you mean {close[0]}?" if close else f"{where} has {', '.join(names)}"
        return [*key, field], f"unknown key; {hint}"
    if (checked := _FIELD_PROBLEM.match(problem)) is not None and checked.group("field") in names:
        below = [part for part in checked.group("below").split(".") if part]
        return [*key, checked.group("field"), *below], checked.group("problem")  # a `__post_init__` check
    return key, problem


def _source_of(key: tuple[str, ...], sources: Mapping[tuple[str, ...], str], default: str) -> str:
    for n in range(len(key), 0, -1):  # the value itself, or the section it was set with
        if key[:n] in sources:
            return sources[key[:n]]
    below = dict.fromkeys(s for k, s in sources.items() if k[: len(key)] == key)  # a check of a section
    return " + ".join(below) if below else default


def convert(
    data: Mapping[str, Any], *, source: str, sources: Mapping[tuple[str, ...], str] | None = None
) -> Settings:
    """Validate `data` into `Settings`; errors name the key path, the rule and the source.

    Args:
        data: The nested settings mapping.
        source: Where the values came from, unless `sources` says it of a key.
        sources: The source of each key path set (see `SettingsLayers`).
    """
    from ._settings import Settings

    try:
        return msgspec.convert(data, Settings)
    except (msgspec.ValidationError, ValueError, TypeError) as exc:
        key, problem = _locate(str(exc))
        origin = _source_of(tuple(key), sources or {}, source)
        raise ConfigError(".".join(key) or "settings", problem, source=origin) from None


def load(
    path: str | None,
    *,
    overrides: Sequence[str],
    environ: Mapping[str, str] | None = None,
    flags: Sequence[tuple[str, str, Any]] = (),
) -> Settings:
    """Read `path` (TOML, optional), apply `MOCRA_*` variables, `key=value` overrides, then `flags`.

    Args:
        path: A TOML file, or None.
        overrides: `section.key=value` texts (`mocra run -s`); an error in one is labelled `-s <text>`.
        environ: The environment to read `MOCRA_*` variables from (default: `os.environ`).
        flags: Command-line options that stand for a setting, as `(label, key, value)`, e.g.
            `("--queue nats://h:4222", "queue.url", "nats://h:4222")`; an error in one names its label.

    Raises:
        ConfigError: the file cannot be read or parsed, or a key or value is invalid (naming the key,
            the rule and where the value came from).

    Example:
        >>> load(None, overrides=["crawl.max_pages=0"], environ={})
        Traceback (most recent call last):
        ...
        mocra_core._errors.ConfigError: -s crawl.max_pages=0: crawl.max_pages: must be at least 1 (leave it unset for no limit), got 0
    """  # noqa: E501
    layers = SettingsLayers()
    if path is not None:
        try:
            layers.add(msgspec.toml.decode(Path(path).read_bytes()), source=path)
        except FileNotFoundError:
            raise ConfigError("config", "file not found", source=path) from None
        except msgspec.DecodeError as exc:
            raise ConfigError("config", f"not valid TOML: {exc}", source=path) from None
    for name, key_path, value in _env_overrides(os.environ if environ is None else environ):
        layers.set(key_path, value, source=name)
    for text in overrides:
        key_path, value = parse_override(text)
        layers.set(key_path, value, source=f"-s {_redact_text(text)}")
    for label, key, value in flags:
        layers.set(key.split("."), value, source=label)
    return layers.convert(source=path or "<defaults>")
