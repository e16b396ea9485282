"""The README's examples run and print what the README says (also from the built wheel, alone)."""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1]
WORKSPACE = PACKAGE.parents[1]
README = PACKAGE / "README.md"


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", README.read_text(), flags=re.MULTILINE | re.DOTALL)


def etl_example() -> tuple[str, str]:
    """The first python block and the text block printed after it."""
    text = README.read_text()
    code = blocks("python")[0]
    after = text[text.index(code) + len(code) :]
    expected = re.search(r"^```text\n(.*?)^```$", after, flags=re.MULTILINE | re.DOTALL)
    assert expected is not None, "the ETL example is followed by its output in a text block"
    return code, expected.group(1)


def run(python: str, code: str, cwd: pathlib.Path) -> str:
    # -I: isolated from the workspace's sys.path and environment; the interpreter's packages only.
    result = subprocess.run(
        [python, "-I", "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_etl_example_prints_what_the_readme_says(tmp_path: pathlib.Path) -> None:
    code, expected = etl_example()
    assert run(sys.executable, code, tmp_path) == expected


def test_durable_example_resumes(tmp_path: pathlib.Path) -> None:
    code = blocks("python")[1]
    assert run(sys.executable, code, tmp_path).splitlines() == [
        "extracting",
        "failed: warehouse is down",
        "restored 6",
    ]


def uv() -> str:
    found = pathlib.Path(sys.executable).parent / "uv"
    if found.exists():
        return str(found)
    which = shutil.which("uv")
    if which is None:
        pytest.fail("uv is not installed; run `uv sync --all-packages`")
    return which


def uv_run(*args: str, cwd: pathlib.Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")}
    return subprocess.run(
        [uv(), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False
    )


@pytest.mark.slow
def test_etl_example_runs_from_the_wheel_alone(tmp_path: pathlib.Path) -> None:
    dist = tmp_path / "dist"
    built = uv_run("build", "--package", "mocra-dag", "--wheel", "-o", str(dist), cwd=WORKSPACE)
    assert built.returncode == 0, built.stdout + built.stderr
    [wheel] = dist.glob("mocra_dag-*.whl")

    venv = tmp_path / "venv"
    interpreter = f"{sys.version_info.major}.{sys.version_info.minor}"
    made = uv_run("venv", "--quiet", "--python", interpreter, str(venv), cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    # The wheel by path (an unrelated "mocra" project exists on PyPI), and the base dependencies.
    installed = uv_run(
        "pip", "install", "--quiet", "--python", str(python), str(wheel), "anyio", "msgspec", cwd=tmp_path
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr

    modules = ("mocra_dag", "mocra", "mocra_core", "lmdb")
    probe = f"import importlib.util as u; print([m for m in {modules!r} if u.find_spec(m)])"
    assert run(str(python), probe, tmp_path).strip() == "['mocra_dag']"
    code, expected = etl_example()
    assert run(str(python), code, tmp_path) == expected
