"""Start URLs from a CSV file or a workbook: `read_seed_urls`, `Seeds.from_file`, `Spider.start_urls_file`."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import openpyxl
import pytest

from mocra_core import ConfigError, MissingExtra
from mocra_core.modules import Seeds, Spider, read_seed_urls

if TYPE_CHECKING:
    import pathlib


def workbook(path: pathlib.Path, **sheets: list[list[object]]) -> pathlib.Path:
    book = openpyxl.Workbook()
    book.remove(book.active)  # type: ignore[arg-type]
    for title, rows in sheets.items():
        sheet = book.create_sheet(title)
        for row in rows:
            sheet.append(row)
    book.save(path)
    return path


def test_a_csv_column_by_its_header_skipping_empty_cells(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "shops.csv"
    path.write_text(
        "\ufeffName, URL \nA, https://a.example/ \nB,\nC\nD,https://d.example/x?q=1,extra\n", "utf-8"
    )
    assert read_seed_urls(path, column="url") == ["https://a.example/", "https://d.example/x?q=1"]
    assert read_seed_urls(path, column="Name") == ["A", "B", "C", "D"]


def test_a_tsv_column_by_index_reads_every_row(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "urls.tsv"
    path.write_text("link\tnote\nhttps://a.example/\tx\n", "utf-8")
    assert read_seed_urls(path, column=0) == ["link", "https://a.example/"]


def test_a_workbook_column_of_a_sheet(tmp_path: pathlib.Path) -> None:
    path = workbook(
        tmp_path / "urls.xlsx",
        notes=[["nothing"]],
        shops=[["id", "url"], [1, "https://a.example/"], [2, None], [3, 42], [4, " https://b.example/ "]],
    )
    with pytest.raises(ConfigError, match=r"the header is \['nothing'\]"):  # the first sheet's
        read_seed_urls(path)
    assert read_seed_urls(path, sheet="shops") == ["https://a.example/", "42", "https://b.example/"]


def test_the_errors_name_the_file_and_what_it_has(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "shops.csv"
    path.write_text("name,link\n", "utf-8")
    with pytest.raises(
        ConfigError, match=r"shops.csv: start_urls_column: no column 'url'; the header is \['name', 'link'\]"
    ):
        read_seed_urls(path)
    with pytest.raises(ConfigError, match="start_urls_file: cannot read it: No such file"):
        read_seed_urls(tmp_path / "missing.csv")
    with pytest.raises(ConfigError, match=r"start_urls_file: \.txt: use \.csv, \.tsv or \.xlsx"):
        read_seed_urls(tmp_path / "urls.txt")
    (tmp_path / "latin.csv").write_bytes(b"url\nhttps://caf\xe9.example/\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        read_seed_urls(tmp_path / "latin.csv")
    xlsx = workbook(tmp_path / "urls.xlsx", shops=[["url"]])
    with pytest.raises(ConfigError, match=r"start_urls_sheet: no sheet 'nope'; it has \['shops'\]"):
        read_seed_urls(xlsx, sheet="nope")
    (tmp_path / "fake.xlsx").write_text("not a zip", "utf-8")
    with pytest.raises(ConfigError, match="fake.xlsx: start_urls_file: cannot read the workbook"):
        read_seed_urls(tmp_path / "fake.xlsx")


def test_seeds_from_file_sets_aside_what_is_not_a_url(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "urls.csv"
    path.write_text("url\nhttps://a.example/\nnot a url\nftp://b.example/\n", "utf-8")
    seeds = Seeds("shop/spider")
    seeds.from_file(path)
    assert [r.url for r in seeds.requests] == ["https://a.example/"]
    assert [problem.url for problem in seeds.invalid] == ["not a url", "ftp://b.example/"]


@pytest.mark.anyio
async def test_a_spider_seeds_its_start_urls_and_its_start_urls_file(tmp_path: pathlib.Path) -> None:
    path = workbook(tmp_path / "urls.xlsx", Sheet=[["Shop", "Link"], ["a", "https://a.example/"], ["b", "b"]])

    class Shops(Spider[dict[str, str]]):
        name = "shops"
        start_urls = ("https://first.example/",)
        start_urls_file = str(path)
        start_urls_column = "link"

    seeds = Seeds("shops/spider")
    await Shops().start(seeds)
    assert [r.url for r in seeds.requests] == ["https://first.example/", "https://a.example/"]
    assert [problem.url for problem in seeds.invalid] == ["b"]


def test_a_workbook_without_the_excel_extra_names_it(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = workbook(tmp_path / "urls.xlsx", Sheet=[["url"]])
    monkeypatch.setitem(sys.modules, "openpyxl", None)
    with pytest.raises(
        MissingExtra, match=r"reading seeds from '.*urls.xlsx' needs: pip install 'mocra\[excel\]'"
    ):
        read_seed_urls(path)
    (tmp_path / "urls.csv").write_text("url\nhttps://a.example/\n", "utf-8")
    assert read_seed_urls(tmp_path / "urls.csv") == ["https://a.example/"]  # CSV needs no extra
