from __future__ import annotations

import csv
import dataclasses
import logging
from typing import TYPE_CHECKING

import msgspec
import pytest

from mocra_core.sinks import CsvSink, SinkError

if TYPE_CHECKING:
    import pathlib


class Book(msgspec.Struct, rename="camel"):
    book_title: str
    price: float | None = None
    tags: list[str] = []


@dataclasses.dataclass
class Author:
    name: str
    books: int


def rows(path: pathlib.Path) -> list[list[str]]:
    with path.open(newline="", encoding="utf-8") as file:
        return list(csv.reader(file))


@pytest.mark.anyio
async def test_header_from_the_first_dict_and_missing_keys_empty(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "items.csv"
    async with CsvSink(path) as sink:
        await sink.write([{"title": "Dune", "price": 9.5}, {"title": "Emma"}])
        await sink.write([{"price": 3, "title": 'Say "hi", → ☕\nok'}])
    assert rows(path) == [["title", "price"], ["Dune", "9.5"], ["Emma", ""], ['Say "hi", → ☕\nok', "3"]]
    assert path.read_bytes().startswith(b"title,price\r\n")


@pytest.mark.anyio
async def test_header_from_struct_fields_and_nested_values_as_json(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "items.csv"
    async with CsvSink(path) as sink:
        await sink.write([Book("Dune", tags=["sf", "classic"]), Book("Emma", 2.0)])
        await sink.write([{"bookTitle": "X", "tags": {"k": [1, None]}, "price": None}])
    assert rows(path) == [
        ["bookTitle", "price", "tags"],
        ["Dune", "", '["sf","classic"]'],
        ["Emma", "2.0", "[]"],
        ["X", "", '{"k":[1,null]}'],
    ]


@pytest.mark.anyio
async def test_header_from_dataclass_fields(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "items.csv"
    async with CsvSink(path) as sink:
        await sink.write([Author("Ursula", 23)])
    assert rows(path) == [["name", "books"], ["Ursula", "23"]]


@pytest.mark.anyio
async def test_columns_fix_header_and_order_and_header_is_written_even_without_items(
    tmp_path: pathlib.Path,
) -> None:
    path = tmp_path / "empty.csv"
    async with CsvSink(path, columns=["b", "a"]):
        pass
    assert rows(path) == [["b", "a"]]
    path = tmp_path / "items.csv"
    async with CsvSink(path, columns=("b", "a")) as sink:
        assert sink.columns == ["b", "a"]
        await sink.write([{"a": 1, "b": 2}])
    assert rows(path) == [["b", "a"], ["2", "1"]]


@pytest.mark.anyio
async def test_extra_keys_are_left_out_with_one_warning_each(
    tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "items.csv"
    with caplog.at_level(logging.WARNING, logger="mocra_core.sinks"):
        async with CsvSink(path) as sink:
            await sink.write([{"a": 1}, {"a": 2, "zz": 1, "yy": 2}, {"a": 3, "zz": 1}])
            await sink.write([{"a": 4, "zz": 5, "xx": 6}])
    assert rows(path) == [["a"], ["1"], ["2"], ["3"], ["4"]]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2
    assert "['yy', 'zz']" in warnings[0]
    assert "['xx']" in warnings[1]


@pytest.mark.anyio
async def test_append_writes_no_second_header_and_reads_the_columns_back(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "items.csv"
    async with CsvSink(path) as sink:
        await sink.write([{"title": "Dune", "price": 9.5}])
    async with CsvSink(path, append=True) as sink:
        assert sink.columns == ["title", "price"]
        await sink.write([{"price": 1, "title": "Emma"}])
    async with CsvSink(path, append=True, columns=["title", "price"]) as sink:
        await sink.write([{"title": "Ulysses"}])
    assert rows(path) == [["title", "price"], ["Dune", "9.5"], ["Emma", "1"], ["Ulysses", ""]]


@pytest.mark.anyio
async def test_append_to_a_new_file_writes_the_header(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "items.csv"
    async with CsvSink(path, append=True) as sink:
        await sink.write([{"a": 1}])
    assert rows(path) == [["a"], ["1"]]


@pytest.mark.anyio
async def test_append_with_other_columns_fails(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "items.csv"
    path.write_bytes(b"title,price\r\nDune,9.5\r\n")
    sink = CsvSink(path, append=True, columns=["title", "isbn"])
    with pytest.raises(SinkError, match=r"its columns are \['title', 'price'\]") as info:
        await sink.open()
    assert not info.value.retryable
    assert path.read_bytes() == b"title,price\r\nDune,9.5\r\n"


@pytest.mark.anyio
async def test_an_item_that_is_not_a_record_fails_without_writing(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "items.csv"
    async with CsvSink(path) as sink:
        await sink.write([{"a": 1}])
        with pytest.raises(SinkError, match=r"item 1 of the batch is a list, not a record of fields") as info:
            await sink.write([{"a": 2}, [1, 2]])
        assert not info.value.retryable
        with pytest.raises(SinkError, match=r"item 0 of the batch \(object\) cannot be encoded"):
            await sink.write([object()])
    assert rows(path) == [["a"], ["1"]]


@pytest.mark.anyio
async def test_a_dict_holding_a_value_that_cannot_be_encoded_is_named_as_such(tmp_path: pathlib.Path) -> None:
    class Opaque:
        pass

    async with CsvSink(tmp_path / "items.csv") as sink:
        with pytest.raises(SinkError) as info:
            await sink.write([{"a": 1}, {"a": Opaque()}])

    message = str(info.value)
    assert (
        "item 1 of the batch (dict) cannot be encoded: Encoding objects of type Opaque is unsupported"
        in message
    )
    assert "not a" not in message  # it is a dict: the value inside is the problem
    assert not info.value.retryable


@pytest.mark.anyio
async def test_a_directory_path_fails_on_open_naming_it(tmp_path: pathlib.Path) -> None:
    with pytest.raises(SinkError, match=repr(str(tmp_path))) as info:
        await CsvSink(tmp_path).open()
    assert info.value.path == str(tmp_path)
