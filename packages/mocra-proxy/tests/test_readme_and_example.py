"""The README's Python blocks and examples/proxy_pool_httpx.py run offline and print what they say."""

from __future__ import annotations

import pathlib
import re
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
