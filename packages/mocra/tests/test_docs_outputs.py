"""docs/outputs.md runs: its DataFrame example collects the items, its sheet spider seeds from a file."""

from __future__ import annotations

import pathlib

import pytest

from mocra import Mocra
from mocra_core.testing import LocalServer, ServerResponse

from .doc_code import Collect, block_namespaces

DOC = pathlib.Path(__file__).parents[3] / "docs" / "outputs.md"
TEXT = DOC.read_text()


def test_the_dataframe_example_collects_the_items() -> None:
    frame_block, _ = block_namespaces(DOC)
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

    _, sheet_block = block_namespaces(DOC)
    server = LocalServer({"/a": ServerResponse(body="a"), "/b": ServerResponse(body="b")})
    with server.run_in_thread() as base:
        book = openpyxl.Workbook()
        sheet = book.active
        assert sheet is not None
        for row in (["URL"], [base + "/a"], ["not a url"], [None], [base + "/b"]):
            sheet.append(row)
        book.save(tmp_path / "urls.xlsx")
        monkeypatch.chdir(tmp_path)
        sink = Collect()
        result = Mocra.builder().set("crawl.obey_robots=false").spider(sheet_block["FromSheet"](), sink).run()
    assert sorted(item["url"] for item in sink.items) == [base + "/a", base + "/b"]
    assert result.stats.dropped.get("invalid_url") == 1
