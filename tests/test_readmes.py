"""Each distribution's README (its PyPI page) says what it is and how to install it, and its code runs.

Every ```python block runs in a fresh interpreter from an empty folder and must exit 0. What it prints is
checked where the README says it: a ```text block right after it (or after "It prints:") is the whole
output; otherwise `print(...)  # text` comments, in order, are the lines it prints.
"""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys
from dataclasses import dataclass

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
DISTRIBUTIONS = ("mocra", "mocra-core", "mocra-cluster", "mocra-dag", "mocra-proxy", "mocra-store")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", flags=re.MULTILINE | re.DOTALL)
PROMISE = re.compile(r"^\s*print\(.*\)  # (.+)$", flags=re.MULTILINE)


@dataclass(frozen=True)
class Block:
    """A python block of a README and what it promises to print (None: nothing said)."""

    code: str
    output: str | None
    lines: list[str] | None


def readme(distribution: str) -> str:
    return (ROOT / "packages" / distribution / "README.md").read_text(encoding="utf-8")


def python_blocks(text: str) -> list[Block]:
    fences = list(FENCE.finditer(text))
    found = []
    for fence, after in zip(fences, [*fences[1:], None], strict=True):
        if fence.group(1) != "python":
            continue
        between = text[fence.end() : after.start()].strip() if after else None
        output = (
            after.group(2) if after and after.group(1) == "text" and between in ("", "It prints:") else None
        )
        promised = PROMISE.findall(fence.group(2))
        found.append(Block(fence.group(2), output, promised if output is None and promised else None))
    return found


BLOCKS = [
    pytest.param(dist, index, block, id=f"{dist}-{index}")
    for dist in DISTRIBUTIONS
    for index, block in enumerate(python_blocks(readme(dist)))
]


@pytest.mark.parametrize("dist", DISTRIBUTIONS)
def test_the_readme_says_what_it_is_how_to_install_it_and_shows_code(dist: str) -> None:
    text = readme(dist)
    title, _, rest = text.partition("\n")

    assert title == f"# {dist}"
    intro = rest.strip().split("\n\n")[0]
    assert len(intro.split()) >= 10 and not intro.startswith(("#", "```")), "a paragraph saying what it is"
    assert re.search(rf"^pip install {re.escape(dist)}\b", text, flags=re.MULTILINE), "how to install it"
    assert python_blocks(text), "an example"


@pytest.mark.parametrize("dist", ["mocra", "mocra-core"])
def test_the_first_example_says_what_it_prints(dist: str) -> None:
    first = python_blocks(readme(dist))[0]

    assert first.output is not None or first.lines


@pytest.mark.parametrize(("dist", "index", "block"), BLOCKS)
def test_the_readme_code_runs_and_prints_what_it_says(
    dist: str, index: int, block: Block, tmp_path: pathlib.Path
) -> None:
    result = subprocess.run(
        [sys.executable, "-c", block.code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    if block.output is not None:
        assert result.stdout == block.output
    elif block.lines is not None:
        assert result.stdout.splitlines() == block.lines
