"""How `mocra store ...` shows things: aligned tables, run records, and the tenants export written out."""

from __future__ import annotations

import importlib
import json
import os
import pathlib
from typing import TYPE_CHECKING, Any, TextIO

from mocra_core import ConfigError

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from mocra_core.metadata import AssignmentRow, RunRow, TenantRow

__all__ = ("assignment_rows", "run_rows", "table", "tenant_rows", "write_export")


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """`rows` under `headers`, each column as wide as its widest cell, two spaces apart.

    Example:
        >>> print(table(["name", "enabled"], [["alice", "yes"], ["bob", "no"]]), end="")
        name   enabled
        alice  yes
        bob    no
    """
    cells = [[str(cell) for cell in row] for row in [headers, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    return "".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() + "\n" for row in cells
    )


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def tenant_rows(found: Sequence[TenantRow], *, versions: bool) -> tuple[list[str], list[list[object]]]:
    """Headers and rows of accounts, platforms or modules (`versions`: with the modules' version)."""
    headers = ["name", "enabled", *(["version"] if versions else [])]
    rows: list[list[object]] = [
        [t.name, _yes(t.enabled), *([t.version or "-"] if versions else [])] for t in found
    ]
    return headers, rows


def assignment_rows(found: Sequence[AssignmentRow], *, why: bool) -> tuple[list[str], list[list[object]]]:
    """Headers and rows of what a run seeds (`why`: with enabled and what disables a row)."""
    headers = ["account", "platform", "module", "version", "priority", *(["enabled", "why"] if why else [])]
    rows: list[list[object]] = [
        [
            a.account,
            a.platform,
            a.module,
            a.version or "-",
            a.priority,
            *([_yes(a.enabled), a.disabled_by or ""] if why else []),
        ]
        for a in found
    ]
    return headers, rows


def run_rows(found: Sequence[RunRow]) -> tuple[list[str], list[list[object]]]:
    """Headers and rows of run records, newest first: when, status, who ran what, pages, the error."""
    headers = ["started (UTC)", "seconds", "status", "module", "account", "platform", "pages", "error"]
    rows: list[list[object]] = []
    for run in found:
        took = "-" if run.finished_at is None else f"{(run.finished_at - run.started_at).total_seconds():.1f}"
        error = (run.error or "").splitlines()[0][:60] if run.error else ""
        rows.append(
            [
                run.started_at.strftime("%Y-%m-%d %H:%M:%S"),
                took,
                run.status,
                run.module,
                run.account or "-",
                run.platform or "-",
                run.stats.get("pages", "-"),
                error,
            ]
        )
    return headers, rows


def _dump(data: Mapping[str, Any], suffix: str) -> str:
    if suffix == ".json":
        return json.dumps(data, indent=2, sort_keys=False, ensure_ascii=False) + "\n"
    if suffix == ".toml":
        try:
            tomli_w = importlib.import_module("tomli_w")
        except ImportError:
            raise ConfigError(
                "-o",
                "writing TOML needs tomli-w: pip install tomli-w (or write .json or .yaml)",
                source="store",
            ) from None
        text: str = tomli_w.dumps(data)
        return text
    if suffix in (".yaml", ".yml"):
        try:
            yaml = importlib.import_module("yaml")
        except ImportError:
            raise ConfigError(
                "-o", "writing YAML needs PyYAML: pip install pyyaml (or write .json)", source="store"
            ) from None
        dumped: str = yaml.safe_dump(dict(data), sort_keys=False, allow_unicode=True)
        return dumped
    raise ConfigError(
        "-o", f"unknown tenants file type {suffix!r} (use .json, .toml or .yaml)", source="store"
    )


def write_export(data: Mapping[str, Any], path: str | None, stream: TextIO, *, secrets: bool) -> str | None:
    """Write a tenants export as JSON to `stream`, or to `path` in the format its extension names.

    A file holding passwords (`secrets`) is readable by its owner only. Returns the path written, if any.

    Example:
        >>> import io
        >>> out = io.StringIO()
        >>> write_export({"accounts": {"alice": {"enabled": True}}}, None, out, secrets=False)
        >>> print(out.getvalue(), end="")
        {
          "accounts": {
            "alice": {
              "enabled": true
            }
          }
        }
    """
    if path is None:
        stream.write(_dump(data, ".json"))
        return None
    text = _dump(data, pathlib.Path(path).suffix.lower())
    mode = 0o600 if secrets else 0o666
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        if secrets:
            os.fchmod(fd, 0o600)  # an existing file keeps its mode otherwise
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as exc:
        raise ConfigError("-o", f"cannot write: {exc.strerror or exc}", source=path) from None
    return path
