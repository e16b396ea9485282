"""The tenants file (TOML, JSON, or YAML with PyYAML): read it and check it, with errors naming file and key.

Sections: ``platforms``, ``modules`` (with ``middlewares = [{name, position, enabled, config}]``),
``middlewares``, ``accounts`` (with ``credentials.<platform | "*">``), ``[[relations]]`` (exactly two of
account / platform / module) and ``[[schedules]]``. Omitted fields are left out of the checked mapping, so
an import only changes what the file says; an export writes every field.

>>> check_tenants({"accounts": {"alice": {"config": {"region": "eu"}}}})["accounts"]
{'alice': {'config': {'region': 'eu'}}}
>>> check_tenants({"relations": [{"module": "prices"}]}, source="t.toml")
Traceback (most recent call last):
...
mocra_store._errors.TenantsFileError: t.toml: relations[0]: name exactly two of account, platform, module
"""

from __future__ import annotations

import importlib
import json
import pathlib
import tomllib
from collections.abc import Mapping
from typing import Any, TypeAlias

from ._errors import TenantsFileError

__all__ = ("ANY_PLATFORM", "RELATION_KINDS", "check_tenants", "load_tenants")

ANY_PLATFORM = "*"
RELATION_KINDS = (("account", "platform"), ("module", "account"), ("module", "platform"))
_SECTIONS = ("platforms", "middlewares", "modules", "accounts", "relations", "schedules")
_Kinds: TypeAlias = type | tuple[type, ...]
_NAMED: dict[str, dict[str, _Kinds]] = {
    "platforms": {"enabled": bool, "config": dict},
    "modules": {"version": (str, int), "enabled": bool, "config": dict, "middlewares": list},
    "middlewares": {"kind": str, "enabled": bool, "config": dict},
    "accounts": {"enabled": bool, "config": dict, "credentials": dict},
}
_MODULE_MIDDLEWARE: dict[str, _Kinds] = {"name": str, "position": int, "enabled": bool, "config": dict}
_CREDENTIAL: dict[str, _Kinds] = {"username": str, "password": str, "extra": dict}
_RELATION: dict[str, _Kinds] = {
    "account": str,
    "platform": str,
    "module": str,
    "priority": int,
    "enabled": bool,
    "config": dict,
}
_SCHEDULE: dict[str, _Kinds] = {
    "module": str,
    "account": str,
    "platform": str,
    "cron": str,
    "misfire": (int, float),
    "enabled": bool,
}


class _Checker:
    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, problem: str) -> TenantsFileError:
        return TenantsFileError(f"{self.source}: {where + ': ' if where else ''}{problem}")

    def fields(self, where: str, value: Any, allowed: Mapping[str, _Kinds]) -> dict[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(where, f"expected a table, got {type(value).__name__}")
        checked: dict[str, Any] = {}
        for key, item in value.items():
            expected = allowed.get(key)
            if expected is None:
                raise self.fail(f"{where}.{key}", f"unknown key (known: {', '.join(allowed)})")
            kinds = expected if isinstance(expected, tuple) else (expected,)
            if not isinstance(item, kinds) or (isinstance(item, bool) and bool not in kinds):
                names = " or ".join("table" if k is dict else k.__name__ for k in kinds)
                raise self.fail(f"{where}.{key}", f"expected {names}, got {type(item).__name__}")
            checked[key] = dict(item) if isinstance(item, Mapping) else item
        return checked

    def named(self, section: str, value: Any) -> dict[str, dict[str, Any]]:
        if not isinstance(value, Mapping):
            raise self.fail(section, "expected a table of names")
        out: dict[str, dict[str, Any]] = {}
        for name, body in value.items():
            where = f"{section}.{name}"
            entry = self.fields(where, body, _NAMED[section])
            if section == "modules":
                if "version" in entry:
                    entry["version"] = str(entry["version"])
                if "middlewares" in entry:
                    entry["middlewares"] = [
                        self.fields(f"{where}.middlewares[{i}]", ref, _MODULE_MIDDLEWARE)
                        for i, ref in enumerate(entry["middlewares"])
                    ]
                    for i, ref in enumerate(entry["middlewares"]):
                        if "name" not in ref:
                            raise self.fail(f"{where}.middlewares[{i}]", "missing key name")
            if section == "middlewares" and entry.get("kind", "download") not in ("download", "data"):
                raise self.fail(f"{where}.kind", f"must be 'download' or 'data', got {entry['kind']!r}")
            if section == "accounts" and "credentials" in entry:
                entry["credentials"] = {
                    platform: self.fields(f"{where}.credentials.{platform}", login, _CREDENTIAL)
                    for platform, login in entry["credentials"].items()
                }
            out[str(name)] = entry
        return out

    def rows(self, section: str, value: Any) -> list[dict[str, Any]]:
        if not isinstance(value, list):
            raise self.fail(section, f"expected an array of tables ([[{section}]])")
        out = []
        for i, body in enumerate(value):
            where = f"{section}[{i}]"
            allowed: dict[str, _Kinds] = _RELATION if section == "relations" else _SCHEDULE
            entry = self.fields(where, body, allowed)
            if section == "relations":
                named = tuple(k for k in ("module", "account", "platform") if k in entry)
                if len(named) != 2:
                    raise self.fail(where, "name exactly two of account, platform, module")
            else:
                for key in ("module", "cron"):
                    if key not in entry:
                        raise self.fail(where, f"missing key {key}")
                if "misfire" in entry:
                    entry["misfire"] = float(entry["misfire"])
            out.append(entry)
        return out


def check_tenants(data: Any, *, source: str = "<tenants>") -> dict[str, Any]:
    """Check a tenants mapping; returns a cleaned copy, or raises ``TenantsFileError`` naming the key path."""
    checker = _Checker(source)
    if not isinstance(data, Mapping):
        raise checker.fail("", f"expected a table at the top, got {type(data).__name__}")
    checked: dict[str, Any] = {}
    for section, value in data.items():
        if section not in _SECTIONS:
            raise checker.fail(str(section), f"unknown section (known: {', '.join(_SECTIONS)})")
        if section in _NAMED:
            checked[section] = checker.named(section, value)
        else:
            checked[section] = checker.rows(section, value)
    return checked


def _parse(path: pathlib.Path, text: str) -> Any:
    suffix = path.suffix.lower()
    if suffix == ".toml":
        return tomllib.loads(text)
    if suffix == ".json":
        return json.loads(text)
    if suffix in (".yaml", ".yml"):
        try:
            yaml = importlib.import_module("yaml")
        except ImportError:
            raise TenantsFileError(
                f"{path}: reading YAML needs PyYAML: pip install pyyaml (or 'mocra-store[yaml]')"
            ) from None
        return yaml.safe_load(text)
    raise TenantsFileError(f"{path}: unknown tenants file type {suffix!r} (use .toml, .json, .yaml or .yml)")


def load_tenants(path: str | pathlib.Path) -> dict[str, Any]:
    """Read and check a tenants file (.toml, .json, .yaml/.yml); errors name the file and the key path."""
    path = pathlib.Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TenantsFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        data = _parse(path, text)
    except TenantsFileError:
        raise
    except Exception as exc:  # the parsers' own errors carry line and column
        raise TenantsFileError(f"{path}: not valid {path.suffix.lstrip('.').upper()}: {exc}") from None
    return check_tenants(data if data is not None else {}, source=str(path))
