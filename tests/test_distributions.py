"""Each distribution builds a wheel and installs alone; the base install stays small."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    import pathlib

    from conftest import Workspace

pytestmark = pytest.mark.slow

DISTRIBUTIONS = ("mocra", "mocra_core", "mocra_cluster", "mocra_dag", "mocra_proxy", "mocra_store")
HEAVY = ("sqlalchemy", "pysyncobj", "redis", "nats", "aiokafka", "polars", "openpyxl", "uvicorn")


@pytest.fixture(scope="module")
def wheels(ws: Workspace, tmp_path_factory: pytest.TempPathFactory) -> dict[str, pathlib.Path]:
    out = tmp_path_factory.mktemp("dist")
    result = ws.run(ws.tool("uv"), "build", "--all-packages", "--wheel", "--out-dir", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    found = {path.name.split("-")[0]: path for path in out.glob("*.whl")}
    return found


def make_venv(ws: Workspace, where: pathlib.Path) -> pathlib.Path:
    interpreter = f"{sys.version_info.major}.{sys.version_info.minor}"
    result = ws.run(ws.tool("uv"), "venv", "--quiet", "--python", interpreter, str(where))
    assert result.returncode == 0, result.stderr
    return where / "bin" / "python"


def install(ws: Workspace, python: pathlib.Path, *requirements: str) -> None:
    # Wheels are passed by path: an unrelated project named "mocra" exists on PyPI.
    result = ws.run(ws.tool("uv"), "pip", "install", "--quiet", "--python", str(python), *requirements)
    assert result.returncode == 0, result.stdout + result.stderr


def probe(ws: Workspace, python: pathlib.Path, *modules: str) -> dict[str, bool]:
    code = "import importlib.util as u, sys\n" + "".join(
        f"print({m!r}, u.find_spec({m!r}) is not None)\n" for m in modules
    )
    result = ws.run(str(python), "-I", "-c", code)
    assert result.returncode == 0, result.stderr
    return {line.split()[0]: line.split()[1] == "True" for line in result.stdout.splitlines()}


def test_six_wheels_are_built(wheels: dict[str, pathlib.Path]) -> None:
    assert sorted(wheels) == sorted(DISTRIBUTIONS)
    for path in wheels.values():
        assert path.name.endswith("-py3-none-any.whl")


@pytest.mark.parametrize("leaf", ["mocra_dag", "mocra_proxy", "mocra_cluster", "mocra_store"])
def test_leaf_package_installs_and_imports_alone(
    ws: Workspace, wheels: dict[str, pathlib.Path], tmp_path: pathlib.Path, leaf: str
) -> None:
    python = make_venv(ws, tmp_path / "venv")
    install(ws, python, str(wheels[leaf]))

    result = ws.run(str(python), "-I", "-c", f"import {leaf}; print({leaf}.__version__)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "0.1.0"
    found = probe(ws, python, leaf, *[d for d in DISTRIBUTIONS if d != leaf])
    assert found == {leaf: True, **{d: False for d in DISTRIBUTIONS if d != leaf}}


def test_mocra_with_nats_extra_pulls_nats_and_nothing_heavier(
    ws: Workspace, wheels: dict[str, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    python = make_venv(ws, tmp_path / "venv")
    install(ws, python, f"{wheels['mocra']}[nats]", str(wheels["mocra_core"]), str(wheels["mocra_dag"]))

    found = probe(ws, python, "mocra", "mocra_core", "nats", "aiokafka", "redis", "sqlalchemy", "pysyncobj")
    assert found == {
        "mocra": True,
        "mocra_core": True,
        "nats": True,
        "aiokafka": False,
        "redis": False,
        "sqlalchemy": False,
        "pysyncobj": False,
    }
    result = ws.run(str(python.parent / "mocra"), "version")
    assert result.returncode == 0, result.stderr
    assert "mocra-core 0.1.0" in result.stdout


def test_plain_mocra_install_stays_small(
    ws: Workspace, wheels: dict[str, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    python = make_venv(ws, tmp_path / "venv")
    install(ws, python, str(wheels["mocra"]), str(wheels["mocra_core"]), str(wheels["mocra_dag"]))

    found = probe(ws, python, "mocra", "mocra_dag", *HEAVY)
    assert found == {"mocra": True, "mocra_dag": True, **dict.fromkeys(HEAVY, False)}
    result = ws.run(str(python.parent / "mocra"), "demo", "--books", "12", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "all 12 books scraped once each" in result.stdout
