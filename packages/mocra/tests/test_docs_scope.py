"""The code in docs/scope.md runs: each block executes, and each spider it defines compiles."""

from __future__ import annotations

import pathlib
import re

import pytest

from mocra import Spider
from mocra_core.modules import compile_module

DOC = pathlib.Path(__file__).parents[3] / "docs" / "scope.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_each_python_block_runs_and_its_spiders_compile(code: str) -> None:
    namespace: dict[str, object] = {"__name__": "docs_scope"}
    exec(compile(code, str(DOC), "exec"), namespace)
    spiders = [
        v for v in namespace.values() if isinstance(v, type) and issubclass(v, Spider) and v is not Spider
    ]
    assert spiders, "each block defines a spider"
    for spider in spiders:
        compiled = compile_module(spider())
        assert compiled.scope.allows(spider.start_urls[0])


def test_the_blocks_are_found() -> None:
    assert len(BLOCKS) == 4
