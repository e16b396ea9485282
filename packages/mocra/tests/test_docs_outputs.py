"""docs/outputs.md runs: its DataFrame example collects the items, its sheet spider seeds from a file."""

from __future__ import annotations

import pathlib
import re
from typing import Any

import pytest

from mocra import Mocra
from mocra_core.testing import LocalServer, ServerResponse

DOC = pathlib.Path(__file__).parents[3] / "docs" / "outputs.md"
TEXT = DOC.read_text()


def blocks() -> list[dict[str, Any]]:
    spaces = []
    for code in re.findall(r"```python\n(.*?)```", TEXT, flags=re.S):
        namespace: dict[str, Any] = {"__name__": "docs_outputs"}
        exec(compile(code, str(DOC), "exec"), namespace)
        spaces.append(namespace)
    return spaces


def test_the_dataframe_example_collects_the_items() -> None:
    frame_block, _ = blocks()
    server = LocalServer({"/": ServerResponse(body="hello")})
    with server.run_in_thread() as base:
        titles = frame_block["Titles"]
        titles.start_urls = [base + "/"]
        frame = frame_block["crawl"]()
    assert frame.to_dicts() == [{"url": base + "/", "status": 200}]


def test_the_sheet_spider_seeds_from_its_workbook(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import openpyxl

    _, sheet_block = blocks()
    server = LocalServer({"/a": ServerResponse(body="a"), "/b": ServerResponse(body="b")})
    with server.run_in_thread() as base:
        book = openpyxl.Workbook()
        sheet = book.active
        assert sheet is not None
        for row in (["URL"], [base + "/a"], ["not a url"], [None], [base + "/b"]):
            sheet.append(row)
        book.save(tmp_path / "urls.xlsx")
        monkeypatch.chdir(tmp_path)
        items: list[dict[str, Any]] = []
        result = (
            Mocra.builder()
            .set("crawl.obey_robots=false")
            .spider(
                sheet_block["FromSheet"](),
                _Collect(items),  # type: ignore[arg-type]
            )
            .run()
        )
    assert sorted(item["url"] for item in items) == [base + "/a", base + "/b"]
    assert result.stats.dropped.get("invalid_url") == 1


class _Collect:
    def __init__(self, items: list[dict[str, Any]]) -> None:
        self.items = items

    async def open(self) -> None: ...

    async def write(self, batch: list[dict[str, Any]]) -> None:
        self.items.extend(batch)

    async def close(self) -> None: ...
