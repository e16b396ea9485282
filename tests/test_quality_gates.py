"""The quality gates run as tests, so `uv run pytest` fails when any of them fails."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conftest import Workspace


def test_ruff_lint(ws: Workspace) -> None:
    result = ws.run(ws.tool("ruff"), "check", "--no-fix", str(ws.root))
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format(ws: Workspace) -> None:
    result = ws.run(ws.tool("ruff"), "format", "--check", str(ws.root))
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_on_every_package(ws: Workspace) -> None:
    result = ws.run(ws.tool("mypy"))  # strict; packages and paths come from [tool.mypy] in pyproject.toml
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success" in result.stdout


def test_import_contracts_kept(ws: Workspace) -> None:
    result = ws.run(ws.tool("lint-imports"), "--no-cache")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout
