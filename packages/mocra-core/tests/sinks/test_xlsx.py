from __future__ import annotations

import datetime
import decimal
import sys
from typing import TYPE_CHECKING, Any

import anyio
import msgspec
import openpyxl
import pytest

import mocra_core.sinks._xlsx
from mocra_core.sinks import SinkError, XlsxSink

if TYPE_CHECKING:
    import pathlib


class Book(msgspec.Struct, rename="camel"):
    book_title: str
    price: float | None = None
    tags: list[str] = []


def sheets(path: pathlib.Path) -> dict[str, list[tuple[Any, ...]]]:
    book = openpyxl.load_workbook(path)
    return {sheet.title: list(sheet.values) for sheet in book.worksheets}


@pytest.mark.anyio
async def test_header_from_the_first_item_and_new_keys_appended(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "items.xlsx"
    async with XlsxSink(path) as sink:
        await sink.write([Book("Dune", 9.5, ["sf"]), Book("Emma")])
        await sink.write([{"bookTitle": "Tea", "shop": "Leaf"}, {"price": 2, "isbn": "123"}])
        assert sink.columns == ["bookTitle", "price", "tags", "shop", "isbn"]
    assert sheets(path) == {
        "items": [
            ("bookTitle", "price", "tags", "shop", "isbn"),
            ("Dune", 9.5, '["sf"]', None, None),
            ("Emma", None, "[]", None, None),
            ("Tea", None, None, "Leaf", None),
            (None, 2, None, None, "123"),
        ]
    }
    assert not (tmp_path / "items.xlsx.spool").exists()


@pytest.mark.anyio
async def test_values_excel_cannot_hold_become_text(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "items.xlsx"
    aware = datetime.datetime(2024, 5, 1, 12, 30, tzinfo=datetime.UTC)
    item = {
        "naive": datetime.datetime(2024, 5, 1, 12, 30),
        "aware": aware,
        "day": datetime.date(2024, 5, 2),
        "took": datetime.timedelta(hours=30),
        "nan": float("nan"),
        "big": 12345678901234567890,
        "price": decimal.Decimal("1.10"),
        "formula": '=HYPERLINK("http://evil")',
        "control": "a\x00b\x1fc\td",
        "nested": {"k": [1, None]},
        "long": "x" * 40_000,
        "flag": True,
    }
    async with XlsxSink(path) as sink:
        await sink.write([item])
    row = dict(zip(*sheets(path)["items"], strict=True))
    assert row == {
        "naive": datetime.datetime(2024, 5, 1, 12, 30),
        "aware": aware.isoformat(),
        "day": datetime.datetime(2024, 5, 2),  # Excel has no date-only cells: a date shows as one
        "took": datetime.timedelta(hours=30),
        "nan": "nan",
        "big": "12345678901234567890",
        "price": "1.10",
        "formula": '=HYPERLINK("http://evil")',
        "control": "a\ufffdb\ufffdc\td",
        "nested": '{"k":[1,null]}',
        "long": "x" * 32_767,
        "flag": True,
    }
    book = openpyxl.load_workbook(path)
    assert book["items"]["H2"].data_type == "s"  # text, not a formula


@pytest.mark.anyio
async def test_a_full_sheet_goes_on_in_a_new_one(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mocra_core.sinks._xlsx, "MAX_ROWS", 3)
    path = tmp_path / "items.xlsx"
    async with XlsxSink(path, sheet="books") as sink:
        await sink.write([{"n": n} for n in range(5)])
    assert sheets(path) == {
        "books": [("n",), (0,), (1,)],
        "books (2)": [("n",), (2,), (3,)],
        "books (3)": [("n",), (4,)],
    }


@pytest.mark.anyio
async def test_append_keeps_the_rows_and_header_of_the_workbook(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "items.xlsx"
    async with XlsxSink(path) as sink:
        await sink.write([{"a": 1, "b": "x"}])
    async with XlsxSink(path, append=True) as sink:
        await sink.write([{"c": 3, "a": 2}])
    assert sheets(path) == {"items": [("a", "b", "c"), (1, "x", None), (2, None, 3)]}
    async with XlsxSink(path) as sink:
        await sink.write([{"z": 0}])
    assert sheets(path) == {"items": [("z",), (0,)]}


_KILLED = """
import os, signal, sys, anyio
from mocra_core.sinks import XlsxSink

async def main() -> None:
    sink = XlsxSink(sys.argv[1])
    await sink.open()
    await sink.write([{"n": 1}])
    await sink.write([{"n": 2, "m": "two"}])
    os.kill(os.getpid(), signal.SIGKILL)

anyio.run(main)
"""


@pytest.mark.anyio
async def test_rows_written_before_a_kill_are_in_the_workbook_of_the_resumed_job(
    tmp_path: pathlib.Path,
) -> None:
    path = tmp_path / "items.xlsx"
    killed = await anyio.run_process([sys.executable, "-c", _KILLED, str(path)], check=False)
    assert killed.returncode < 0
    assert not path.exists()
    with (tmp_path / "items.xlsx.spool").open("ab") as file:  # a write the kill cut short
        file.write(b"\x10\x00\x00\x00\x00\x00\x00\x00torn")
    async with XlsxSink(path, append=True) as sink:
        assert sink.columns == ["n", "m"]
        await sink.write([{"n": 3}])
    assert sheets(path) == {"items": [("n", "m"), (1, None), (2, "two"), (3, None)]}


@pytest.mark.anyio
async def test_an_item_that_is_not_a_record_is_refused(tmp_path: pathlib.Path) -> None:
    async with XlsxSink(tmp_path / "items.xlsx") as sink:
        with pytest.raises(SinkError, match="not a record of fields") as info:
            await sink.write(["text"])
        assert not info.value.retryable
        await sink.write([{"ok": 1}])
    assert sheets(tmp_path / "items.xlsx") == {"items": [("ok",), (1,)]}


def test_without_the_excel_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from mocra_core import MissingExtra

    monkeypatch.delitem(sys.modules, "mocra_core.sinks._xlsx")
    monkeypatch.delitem(vars(mocra_core.sinks), "XlsxSink", raising=False)
    monkeypatch.setitem(sys.modules, "openpyxl", None)
    with pytest.raises(MissingExtra, match=r"sinks.XlsxSink needs: pip install 'mocra\[excel\]'"):
        _ = mocra_core.sinks.XlsxSink
