"""The import-linter contracts catch a forbidden import, proven on a temporary copy of the sources."""

from __future__ import annotations

import os
import shutil
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    import pathlib

    from conftest import Workspace

PACKAGES = {
    "mocra": "mocra",
    "mocra_core": "mocra-core",
    "mocra_cluster": "mocra-cluster",
    "mocra_dag": "mocra-dag",
    "mocra_proxy": "mocra-proxy",
    "mocra_store": "mocra-store",
}


def copy_sources(ws: Workspace, dest: pathlib.Path) -> pathlib.Path:
    src = dest / "src"
    for module, dist in PACKAGES.items():
        shutil.copytree(ws.root / "packages" / dist / "src" / module, src / module)
    return src


def lint_copy(ws: Workspace, src: pathlib.Path) -> tuple[int, str]:
    # PYTHONPATH precedes the editable installs on sys.path, so grimp analyses the copy.
    env = {**os.environ, "PYTHONPATH": str(src)}
    result = ws.run(
        ws.tool("lint-imports"), "--no-cache", "--config", str(ws.root / "pyproject.toml"), env=env
    )
    return result.returncode, result.stdout + result.stderr


def test_clean_copy_keeps_every_contract(ws: Workspace, tmp_path: pathlib.Path) -> None:
    code, output = lint_copy(ws, copy_sources(ws, tmp_path))
    assert code == 0, output
    assert "0 broken" in output


@pytest.mark.parametrize(
    ("importer", "imported", "broken_contract"),
    [
        ("mocra_dag", "mocra_core", "Layers: mocra above mocra_core above the four subsystems"),
        ("mocra_core", "mocra", "Layers: mocra above mocra_core above the four subsystems"),
        ("mocra_proxy", "mocra_store", "The four subsystems are independent of each other"),
        ("mocra", "mocra_cluster", "The facade reaches the subsystems only through mocra_core"),
        (
            "mocra_core/backends/nats",
            "mocra_core.backends.redis",
            "A backend driver folder imports no other driver folder",
        ),
    ],
)
def test_forbidden_import_is_reported(
    ws: Workspace, tmp_path: pathlib.Path, importer: str, imported: str, broken_contract: str
) -> None:
    src = copy_sources(ws, tmp_path)
    offender = src / importer / "_forbidden.py"
    offender.write_text(f'"""Breaks the contract on purpose."""\n\nimport {imported}  # noqa: F401\n')

    code, output = lint_copy(ws, src)

    assert code != 0, output
    assert f"{broken_contract} BROKEN" in output
    assert f"{importer.replace('/', '.')}._forbidden -> {imported}" in output
