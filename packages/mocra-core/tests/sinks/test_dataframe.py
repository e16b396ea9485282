from __future__ import annotations

import dataclasses
import datetime
from typing import TypedDict

import msgspec
import polars as pl
import pytest

from mocra_core.sinks import DataFrameSink, SinkError


class Book(msgspec.Struct):
    title: str
    price: float | None = None
    published: datetime.date | None = None


@dataclasses.dataclass
class Author:
    name: str
    books: list[str]


class Review(TypedDict):
    stars: int


@pytest.mark.anyio
async def test_the_frame_has_a_row_per_item_typed_from_structs_dataclasses_and_typed_dicts() -> None:
    sink = DataFrameSink()
    async with sink:
        await sink.write([Book("Dune"), Book("Emma")])
        await sink.write([Author("Austen", []), Review(stars=5)])
    frame = sink.frame()
    assert dict(frame.schema) == {
        "title": pl.String,
        "price": pl.Float64,  # declared, though every value is null
        "published": pl.Date,
        "name": pl.String,
        "books": pl.List(pl.String),
        "stars": pl.Int64,
    }
    assert frame.rows() == [
        ("Dune", None, None, None, None, None),
        ("Emma", None, None, None, None, None),
        (None, None, None, "Austen", [], None),
        (None, None, None, None, None, 5),
    ]
    assert len(sink) == 4


@pytest.mark.anyio
async def test_dict_columns_are_inferred_and_widen_between_batches() -> None:
    sink = DataFrameSink()
    await sink.write([{"n": 1, "tags": []}])
    await sink.write([{"n": 2.5, "tags": ["a"], "meta": {"k": 1}}])
    await sink.write([{"n": 3, "meta": {"j": "x"}}])
    frame = sink.frame()
    assert dict(frame.schema) == {
        "n": pl.Float64,
        "tags": pl.List(pl.String),
        "meta": pl.Struct({"k": pl.Int64, "j": pl.String}),
    }
    assert frame["n"].to_list() == [1.0, 2.5, 3.0]
    assert frame["meta"].to_list() == [None, {"k": 1, "j": None}, {"k": None, "j": "x"}]
    assert sink.frame().equals(frame)  # asking again gives the same frame


@pytest.mark.anyio
async def test_a_batch_that_does_not_fit_is_refused_and_nothing_of_it_kept() -> None:
    sink = DataFrameSink()
    await sink.write([{"when": datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)}])
    with pytest.raises(SinkError, match="column 'when'") as info:
        await sink.write([{"when": datetime.datetime(2024, 1, 2)}])  # naive: not the same column type
    assert not info.value.retryable
    with pytest.raises(SinkError, match="not a record of fields"):
        await sink.write([1])
    assert sink.frame().height == 1


def test_no_items_gives_an_empty_frame() -> None:
    assert DataFrameSink().frame().shape == (0, 0)
