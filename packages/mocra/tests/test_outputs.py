"""`mocra run -o items.parquet -o items.xlsx` and a spider seeded from a spreadsheet, as a user runs them."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import openpyxl
import polars as pl

from mocra._demo import DemoSite

from .test_cli import quickstart_from_readme, run

if TYPE_CHECKING:
    import pathlib


def test_run_writes_parquet_and_xlsx_outputs(tmp_path: pathlib.Path) -> None:
    site = DemoSite(retry_after=0)
    with site.run_in_thread() as base_url:
        spider = tmp_path / "quickstart.py"
        spider.write_text(quickstart_from_readme().replace("http://127.0.0.1:8000", base_url))
        result = run("run", str(spider), "-o", "books.parquet", "-o", "books.xlsx", cwd=tmp_path)

    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"finished: \d+ pages, 50 items", result.stdout), result.stdout
    expected = {item["title"] for item in site.expected_items()}
    frame = pl.read_parquet(tmp_path / "books.parquet")
    assert dict(frame.schema) == {"title": pl.String, "price": pl.String}  # the Book struct's fields
    assert set(frame["title"]) == expected and frame.height == 50
    rows = list(openpyxl.load_workbook(tmp_path / "books.xlsx")["items"].values)
    assert rows[0] == ("title", "price")
    assert {row[0] for row in rows[1:]} == expected and len(rows) == 51
    assert not list(tmp_path.glob("books.*.parts")) and not list(tmp_path.glob("*.spool"))


SEEDED = """
import msgspec
from mocra import Ctx, Response, Spider


class Page(msgspec.Struct):
    url: str
    title: str


class Pages(Spider[Page]):
    name = "pages"
    start_urls_file = "pages.xlsx"
    start_urls_column = "Link"

    async def parse(self, response: Response, ctx: Ctx[Page]) -> None:
        title = response.css_first("h1")
        ctx.emit(Page(url=response.url, title=title.text() if title else ""))
"""


def test_a_spider_seeded_from_a_workbook(tmp_path: pathlib.Path) -> None:
    site = DemoSite(retry_after=0)
    with site.run_in_thread() as base_url:
        book = openpyxl.Workbook()
        sheet = book.active
        assert sheet is not None
        sheet.append(["Book", "Link"])
        for n in (1, 2, 3):
            sheet.append([f"book {n}", f"{base_url}/catalogue/book-{n}/index.html"])
        sheet.append(["typo", "htp:/nowhere"])
        book.save(tmp_path / "pages.xlsx")
        (tmp_path / "pages.py").write_text(SEEDED)
        result = run("run", "pages.py", "-o", "pages.csv", cwd=tmp_path)

    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"finished: 3 pages, 3 items", result.stdout), result.stdout
    assert "invalid_url" in result.stdout + result.stderr
    lines = (tmp_path / "pages.csv").read_text("utf-8").splitlines()
    assert lines[0] == "url,title" and len(lines) == 4
