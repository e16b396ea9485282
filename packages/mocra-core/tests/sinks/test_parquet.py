from __future__ import annotations

import dataclasses
import datetime
import enum
import signal
import sys
import uuid
from typing import TYPE_CHECKING

import anyio
import msgspec
import polars as pl
import pytest

from mocra_core.sinks import ParquetSink, SinkError

if TYPE_CHECKING:
    import pathlib


class Shelf(msgspec.Struct):
    row: int
    label: str


class Colour(enum.Enum):
    RED = "red"


class Book(msgspec.Struct, rename="camel"):
    book_title: str
    price: float | None = None
    tags: list[str] = []
    published: datetime.date | None = None
    seen: datetime.datetime | None = None
    colour: Colour | None = None
    shelf: Shelf | None = None
    ident: uuid.UUID | None = None
    raw: bytes | None = None


@dataclasses.dataclass
class Author:
    name: str
    books: int | None = None


@pytest.mark.anyio
async def test_columns_are_typed_from_the_struct_even_when_every_value_is_null(
    tmp_path: pathlib.Path,
) -> None:
    path = tmp_path / "items.parquet"
    async with ParquetSink(path) as sink:
        await sink.write([Book("Dune"), Book("Emma")])
    frame = pl.read_parquet(path)
    assert dict(frame.schema) == {
        "bookTitle": pl.String,
        "price": pl.Float64,
        "tags": pl.List(pl.String),
        "published": pl.Date,
        "seen": pl.Null,  # a datetime without Meta(tz=...) may be aware or naive: inferred from the values
        "colour": pl.String,
        "shelf": pl.Struct({"row": pl.Int64, "label": pl.String}),
        "ident": pl.String,
        "raw": pl.Binary,
    }
    assert frame["bookTitle"].to_list() == ["Dune", "Emma"]
    assert not (tmp_path / "items.parquet.parts").exists()


@pytest.mark.anyio
async def test_values_round_trip(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "items.parquet"
    seen = datetime.datetime(2024, 5, 1, 12, tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
    ident = uuid.UUID(int=7)
    book = Book(
        "Dune", 9.5, ["sf"], datetime.date(1965, 8, 1), seen, Colour.RED, Shelf(3, "B"), ident, b"\x00"
    )
    async with ParquetSink(path) as sink:
        await sink.write([book, Author("Herbert", 2), {"bookTitle": "Emma", "extra": 1}])
    rows = pl.read_parquet(path).rows(named=True)
    assert rows[0] == {
        "bookTitle": "Dune",
        "price": 9.5,
        "tags": ["sf"],
        "published": datetime.date(1965, 8, 1),
        "seen": datetime.datetime(2024, 5, 1, 10, tzinfo=datetime.UTC),
        "colour": "red",
        "shelf": {"row": 3, "label": "B"},
        "ident": str(ident),
        "raw": b"\x00",
        "name": None,
        "books": None,
        "extra": None,
    }
    assert (rows[1]["name"], rows[1]["books"], rows[1]["bookTitle"]) == ("Herbert", 2, None)
    assert (rows[2]["bookTitle"], rows[2]["extra"]) == ("Emma", 1)


@pytest.mark.anyio
async def test_row_groups_become_parts_merged_in_order_at_close(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "items.parquet"
    parts = tmp_path / "items.parquet.parts"
    async with ParquetSink(path, row_group_size=3) as sink:
        for n in range(10):
            await sink.write([{"n": n, "half": n / 2 if n % 2 else n // 2}])
        assert sorted(p.name for p in parts.glob("*.parquet")) == [
            "000000.parquet",
            "000001.parquet",
            "000002.parquet",
        ]
        assert not path.exists()  # written whole at close
    frame = pl.read_parquet(path)
    assert frame["n"].to_list() == list(range(10))
    assert frame.schema["half"] == pl.Float64  # Int64 and Float64 rows merge as Float64
    assert not parts.exists()


@pytest.mark.anyio
async def test_a_batch_that_does_not_fit_is_refused_whole_and_the_sink_goes_on(
    tmp_path: pathlib.Path,
) -> None:
    path = tmp_path / "items.parquet"
    async with ParquetSink(path) as sink:
        await sink.write([{"tags": ["a"], "n": 1}])
        with pytest.raises(SinkError, match="column 'tags'") as info:
            await sink.write([{"n": 2}, {"tags": 5, "n": 3}])
        assert not info.value.retryable
        with pytest.raises(SinkError, match="not a record of fields"):
            await sink.write(["just text"])
        await sink.write([{"n": 4, "tags": []}])
    assert pl.read_parquet(path).rows() == [(["a"], 1), ([], 4)]


_KILLED = """
import os, signal, sys, anyio
from mocra_core.sinks import ParquetSink

async def main() -> None:
    sink = ParquetSink(sys.argv[1], row_group_size=2)
    await sink.open()
    for n in range(5):  # two parts and one row in the spool
        await sink.write([{"n": n}])
    os.kill(os.getpid(), signal.SIGKILL)

anyio.run(main)
"""


@pytest.mark.anyio
async def test_batches_written_before_a_kill_are_in_the_file_of_the_resumed_job(
    tmp_path: pathlib.Path,
) -> None:
    path = tmp_path / "items.parquet"
    killed = await anyio.run_process([sys.executable, "-c", _KILLED, str(path)], check=False)
    assert killed.returncode == -signal.SIGKILL
    spool = tmp_path / "items.parquet.parts" / "000002.arrows"
    with spool.open("ab") as file:  # a write the kill cut short
        file.write(b"\x40\x00\x00\x00\x00\x00\x00\x00half")
    async with ParquetSink(path, append=True, row_group_size=2) as resumed:
        assert resumed.schema == {"n": pl.Int64}
        await resumed.write([{"n": 5, "late": "x"}])
    frame = pl.read_parquet(path)
    assert frame["n"].to_list() == list(range(6))
    assert frame["late"].to_list() == [None] * 5 + ["x"]


@pytest.mark.anyio
async def test_append_keeps_the_file_and_without_it_the_file_is_replaced(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "items.parquet"
    async with ParquetSink(path) as sink:
        await sink.write([{"n": 1}])
    async with ParquetSink(path, append=True) as sink:
        await sink.write([{"n": 2.5}])
    assert pl.read_parquet(path)["n"].to_list() == [1.0, 2.5]
    async with ParquetSink(path) as sink:
        await sink.write([{"n": 3}])
    assert pl.read_parquet(path)["n"].to_list() == [3]


@pytest.mark.anyio
async def test_no_items_gives_an_empty_file(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "items.parquet"
    async with ParquetSink(path):
        pass
    assert pl.read_parquet(path).shape == (0, 0)


def test_without_the_polars_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import mocra_core.sinks
    from mocra_core import MissingExtra

    for module in ("_parquet", "_dataframe", "_frames", "_polars_types"):
        monkeypatch.delitem(sys.modules, f"mocra_core.sinks.{module}", raising=False)
    for name in ("ParquetSink", "DataFrameSink"):  # not delattr: its getattr would import them
        monkeypatch.delitem(vars(mocra_core.sinks), name, raising=False)
    monkeypatch.setitem(sys.modules, "polars", None)
    with pytest.raises(
        MissingExtra, match=r"mocra_core.sinks.ParquetSink needs: pip install 'mocra\[polars\]'"
    ):
        _ = mocra_core.sinks.ParquetSink
    with pytest.raises(MissingExtra, match=r"mocra\[polars\]"):
        _ = mocra_core.sinks.DataFrameSink
