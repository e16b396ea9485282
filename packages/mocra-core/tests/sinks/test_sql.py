"""`SqlSink` on SQLite (a file) and on the PostgreSQL server of this machine."""

from __future__ import annotations

import dataclasses
import datetime
import os
import threading
import uuid
from typing import TYPE_CHECKING, Any

import anyio
import msgspec
import pytest
import sqlalchemy as sa

from mocra_core.sinks import SinkError, SqlSink

if TYPE_CHECKING:
    import pathlib
    from collections.abc import Iterator

pytestmark = pytest.mark.anyio

POSTGRES_URL = os.environ.get(
    "MOCRA_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)


class Book(msgspec.Struct):
    id: int
    title: str
    price: float
    tags: list[str]


@dataclasses.dataclass
class Visit:
    url: str
    at: datetime.datetime


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> str:
    return f"sqlite:///{tmp_path}/items.db" if request.param == "sqlite" else POSTGRES_URL


@pytest.fixture
def table(url: str) -> Iterator[str]:
    name = f"t_{uuid.uuid4().hex[:12]}"
    yield name
    engine = sa.create_engine(url)
    with engine.begin() as db:
        db.execute(sa.text(f'DROP TABLE IF EXISTS "{name}"'))
    engine.dispose()


def rows(url: str, table: str, order: str = "id") -> list[dict[str, Any]]:
    """The table's rows, read with the column types the database reports."""
    engine = sa.create_engine(url)
    with engine.connect() as db:
        reflected = sa.Table(table, sa.MetaData(), autoload_with=db)
        found = [dict(row._mapping) for row in db.execute(reflected.select().order_by(reflected.c[order]))]
    engine.dispose()
    return found


async def test_items_become_rows_of_a_table_made_from_the_first_batch(url: str, table: str) -> None:
    async with SqlSink(url, table) as sink:
        await sink.write([Book(1, "Tea", 3.5, ["hot"]), {"id": 2, "title": "Café", "price": 2.0, "tags": []}])
    assert rows(url, table) == [
        {"id": 1, "title": "Tea", "price": 3.5, "tags": ["hot"]},
        {"id": 2, "title": "Café", "price": 2.0, "tags": []},
    ]


async def test_dataclasses_and_dates_keep_their_types(url: str, table: str) -> None:
    at = datetime.datetime(2026, 11, 29, 12, 30)
    async with SqlSink(url, table) as sink:
        await sink.write([Visit("https://example.com/", at)])
    assert rows(url, table, order="url") == [{"url": "https://example.com/", "at": at}]


async def test_a_key_makes_a_second_write_of_an_item_replace_its_row(url: str, table: str) -> None:
    async with SqlSink(url, table, key="id") as sink:
        await sink.write([{"id": 1, "title": "Tea"}, {"id": 2, "title": "Café"}])
        await sink.write([{"id": 1, "title": "Green tea"}, {"id": 1, "title": "Black tea"}][1:])
    async with SqlSink(url, table, key="id") as sink:  # another process, later: same table
        await sink.write([{"id": 2, "title": "Café au lait"}, {"id": 3, "title": "Mate"}])
    assert rows(url, table) == [
        {"id": 1, "title": "Black tea"},
        {"id": 2, "title": "Café au lait"},
        {"id": 3, "title": "Mate"},
    ]


async def test_a_field_seen_later_becomes_a_new_column(url: str, table: str) -> None:
    async with SqlSink(url, table) as sink:
        await sink.write([{"id": 1, "title": "Tea"}])
        await sink.write([{"id": 2, "title": "Café", "stock": 7}])
    assert rows(url, table) == [
        {"id": 1, "title": "Tea", "stock": None},
        {"id": 2, "title": "Café", "stock": 7},
    ]


async def test_a_batch_with_an_item_that_cannot_be_stored_keeps_nothing(tmp_path: pathlib.Path) -> None:
    url = f"sqlite:///{tmp_path}/items.db"
    async with SqlSink(url, "books", key="id") as sink:
        await sink.write([{"id": 1, "title": "Tea"}])
        with pytest.raises(SinkError) as caught:
            await sink.write([{"id": 2, "title": "Café"}, {"id": 3, "title": "Mate", "shelf": object()}])
        assert not caught.value.retryable
        await sink.write([{"id": 4, "title": "Chai"}])
    assert [row["id"] for row in rows(url, "books")] == [1, 4]


@pytest.mark.parametrize("url", ["postgresql"], indirect=True)
async def test_a_wrong_type_on_postgresql_rolls_the_batch_back(table: str) -> None:
    async with SqlSink(POSTGRES_URL, table) as sink:
        await sink.write([{"id": 1, "title": "Tea"}])
        with pytest.raises(SinkError, match=table) as caught:
            await sink.write([{"id": 2, "title": "Café"}, {"id": "three", "title": "Mate"}])
        assert not caught.value.retryable
        await sink.write([{"id": 4, "title": "Chai", "stock": 1}])
    assert [row["id"] for row in rows(POSTGRES_URL, table)] == [1, 4]


@pytest.mark.parametrize("item", ["a string", 42, {}])
async def test_an_item_without_fields_is_refused(tmp_path: pathlib.Path, item: object) -> None:
    async with SqlSink(f"sqlite:///{tmp_path}/items.db", "t") as sink:
        with pytest.raises(SinkError, match="an item needs fields") as caught:
            await sink.write([item])
    assert not caught.value.retryable


async def test_an_item_without_its_key_is_refused(tmp_path: pathlib.Path) -> None:
    async with SqlSink(f"sqlite:///{tmp_path}/items.db", "t", key="id") as sink:
        with pytest.raises(SinkError, match=r"without its key \['id'\]"):
            await sink.write([{"title": "Tea"}])


async def test_a_key_that_is_not_unique_in_an_existing_table_is_refused_at_open(
    tmp_path: pathlib.Path,
) -> None:
    url = f"sqlite:///{tmp_path}/items.db"
    async with SqlSink(url, "books") as sink:  # no key: no primary key
        await sink.write([{"id": 1, "title": "Tea"}])
    with pytest.raises(SinkError, match=r"key \(id\) is not the primary key"):
        await SqlSink(url, "books", key="id").open()


async def test_an_unreachable_database_is_a_retryable_error_naming_it_without_the_password() -> None:
    sink = SqlSink("postgresql+psycopg://mocra:s3cret@127.0.0.1:1/db", "t")
    with pytest.raises(SinkError) as caught:
        await sink.open()
    assert caught.value.retryable
    assert "127.0.0.1:1" in str(caught.value) and "s3cret" not in str(caught.value)


def test_a_url_sqlalchemy_cannot_read_is_refused() -> None:
    async def main() -> None:
        await SqlSink("nodb://x", "t").open()

    import anyio

    with pytest.raises(SinkError, match="cannot use database 'nodb://x'"):
        anyio.run(main)


def test_without_the_sql_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    import mocra_core.sinks
    from mocra_core import MissingExtra

    monkeypatch.delitem(sys.modules, "mocra_core.sinks._sql")
    monkeypatch.delattr(mocra_core.sinks, "SqlSink", raising=False)
    monkeypatch.setitem(sys.modules, "sqlalchemy", None)
    with pytest.raises(MissingExtra, match=r"mocra\[sql\]"):
        _ = mocra_core.sinks.SqlSink


@pytest.mark.parametrize("url", ["postgresql"], indirect=True)
async def test_a_connection_the_server_dropped_is_replaced(table: str) -> None:
    name = f"mocra-test-{uuid.uuid4().hex[:8]}"
    url = f"{POSTGRES_URL}?application_name={name}"
    async with SqlSink(url, table) as sink:
        await sink.write([{"id": 1}])
        admin = sa.create_engine(POSTGRES_URL)
        with admin.begin() as db:  # what a server restart does to the sink's pooled connection
            ended = db.execute(
                sa.text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = :n"),
                {"n": name},
            ).all()
        admin.dispose()
        assert ended == [(True,)]
        await sink.write([{"id": 2}])
    assert [row["id"] for row in rows(POSTGRES_URL, table)] == [1, 2]


async def test_two_workers_making_the_table_at_once_is_retryable(
    url: str, table: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # two workers' first batches: both find no table, both make it at once; the one that loses is retried
    both = threading.Barrier(2, timeout=10)
    create_all = sa.MetaData.create_all

    def at_once(self: sa.MetaData, bind: sa.Connection, *args: Any, **kwargs: Any) -> None:
        both.wait()
        create_all(self, bind, *args, **kwargs)

    failed: list[SinkError] = []

    async def first_batch(sink: SqlSink, item: dict[str, int]) -> None:
        try:
            await sink.write([item])
        except SinkError as exc:
            failed.append(exc)
            assert exc.retryable, exc  # the same write again finds the table the other worker made
            await sink.write([item])

    async with SqlSink(url, table, key=("id",)) as first, SqlSink(url, table, key=("id",)) as second:
        with monkeypatch.context() as patch:
            patch.setattr(sa.MetaData, "create_all", at_once)
            async with anyio.create_task_group() as tg:
                tg.start_soon(first_batch, first, {"id": 1})
                tg.start_soon(first_batch, second, {"id": 2})

    assert sorted(row["id"] for row in rows(url, table)) == [1, 2]
    print(f"{len(failed)} of 2 first batches lost the race: {failed}")
