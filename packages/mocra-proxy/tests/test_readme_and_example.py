"""The README's Python blocks and examples/proxy_pool_httpx.py run offline and print what they say."""

from __future__ import annotations

import pathlib
import re
import shutil
import subprocess
import sys

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1]
ROOT = PACKAGE.parents[1]
README = PACKAGE / "README.md"
EXAMPLE = ROOT / "examples" / "proxy_pool_httpx.py"


def _run(path: pathlib.Path) -> str:
    result = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, timeout=60, check=False, cwd=path.parent
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def _python_blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", README.read_text(), flags=re.MULTILINE | re.DOTALL)


def _promised(code: str) -> list[str]:
    """What the block's `print(...)  # expected` lines promise, in order."""
    return re.findall(r"^\s*print\(.*\)  # (.+)$", code, flags=re.MULTILINE)


@pytest.mark.parametrize("index", range(len(_python_blocks())))
def test_readme_block_prints_what_its_comments_say(index: int, tmp_path: pathlib.Path) -> None:
    code = _python_blocks()[index]
    script = tmp_path / f"block_{index}.py"
    script.write_text(code)

    printed = _run(script).splitlines()

    assert printed == _promised(code)


def test_standalone_example_fetches_every_page_and_evicts_the_banned_and_the_dead_proxy() -> None:
    printed = _run(EXAMPLE)

    lines = printed.splitlines()
    assert lines[1] == "fetched 10 pages: 'page 0' ... 'page 9'"
    assert lines[2].startswith("evicted: 2 - left: http://alice:***@127.0.0.1:")
    assert lines[3] == "the good proxy served 10; the banned one answered 403 1 time(s)"
    assert "s3cret" not in printed


def test_standalone_example_imports_nothing_from_mocra() -> None:
    imports = re.findall(r"^(?:from|import) (\S+)", EXAMPLE.read_text(), flags=re.MULTILINE)

    assert {name.split(".")[0] for name in imports} == {"__future__", "anyio", "httpx", "mocra_proxy"}


def _uv() -> str:
    found = pathlib.Path(sys.executable).parent / "uv"
    return str(found) if found.exists() else (shutil.which("uv") or pytest.fail("uv is not installed"))


@pytest.mark.slow
def test_the_wheel_alone_runs_the_example(tmp_path: pathlib.Path) -> None:
    def run(*args: str) -> str:
        result = subprocess.run(args, capture_output=True, text=True, timeout=600, check=False, cwd=tmp_path)
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout

    run(_uv(), "build", "--package", "mocra-proxy", "--wheel", "--out-dir", str(tmp_path), str(ROOT))
    run(_uv(), "venv", "--quiet", "--python", sys.executable, str(tmp_path / "venv"))
    python = tmp_path / "venv" / "bin" / "python"
    run(_uv(), "pip", "install", "--quiet", "--python", str(python), str(next(tmp_path.glob("*.whl"))))
    shutil.copy(EXAMPLE, tmp_path / EXAMPLE.name)

    printed = run(str(python), "-I", str(tmp_path / EXAMPLE.name))

    assert "fetched 10 pages" in printed
    alone = 'import importlib.util as u; print([m for m in ("mocra", "mocra_core") if u.find_spec(m)])'
    assert run(str(python), "-I", "-c", alone).strip() == "[]"
