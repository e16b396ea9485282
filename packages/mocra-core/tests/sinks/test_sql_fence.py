"""Fenced writes of the keyed `SqlSink`: a worker whose claim expired cannot overwrite its successor's row.

On SQLite (a file) and on the PostgreSQL server of this machine.
"""

from __future__ import annotations

import os
import uuid
from typing import TYPE_CHECKING, Any

import anyio
import pytest
import sqlalchemy as sa

from mocra_core.config import SinkSettings
from mocra_core.engine.parse._items import ItemWriter
from mocra_core.middleware import MiddlewareChain
from mocra_core.observe import Stats
from mocra_core.queue import Delivery, Fence
from mocra_core.sinks import FanoutSink, FencedSink, JsonlSink, SqlSink

if TYPE_CHECKING:
    import pathlib
    from collections.abc import Iterator

pytestmark = pytest.mark.anyio

POSTGRES_URL = os.environ.get(
    "MOCRA_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
FIRST, SECOND = Fence("response/7", 1), Fence("response/7", 2)  # two leases of one message


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


def rows(url: str, table: str) -> list[tuple[Any, ...]]:
    engine = sa.create_engine(url)
    with engine.connect() as db:
        found = [tuple(row) for row in db.execute(sa.text(f'SELECT * FROM "{table}" ORDER BY 1'))]
    engine.dispose()
    return found


def sql(url: str, *statements: str) -> None:
    engine = sa.create_engine(url)
    with engine.begin() as db:
        for statement in statements:
            db.execute(sa.text(statement))
    engine.dispose()


async def test_a_write_under_an_expired_claim_loses_to_the_newer_claims_row(url: str, table: str) -> None:
    async with SqlSink(url, table, key="url") as sink:
        assert (
            await sink.write_fenced([{"url": "/a", "by": "b"}, {"url": "/b", "by": "b"}], [SECOND, SECOND])
            == 0
        )
        assert await sink.write_fenced([{"url": "/a", "by": "a"}], [FIRST]) == 1  # the paused worker resumes
        assert (
            await sink.write_fenced([{"url": "/b", "by": "b2"}], [SECOND]) == 0
        )  # its own claim again: wins
        assert sink.fenced == 1
    assert rows(url, table) == [("/a", "b", "response/7", 2), ("/b", "b2", "response/7", 2)]


async def test_another_message_or_a_write_without_a_fence_replaces_the_row_as_before(
    url: str, table: str
) -> None:
    async with SqlSink(url, table, key="url") as sink:
        await sink.write_fenced([{"url": "/a", "by": "x"}], [Fence("response/8", 5)])
        assert await sink.write_fenced([{"url": "/a", "by": "y"}], [Fence("response/9", 1)]) == 0
        assert rows(url, table) == [("/a", "y", "response/9", 1)]
        await sink.write([{"url": "/a", "by": "plain"}])  # not through the engine: the last write wins
    assert rows(url, table) == [("/a", "plain", "response/9", 1)]


async def test_an_existing_keyed_table_gets_the_fence_columns(url: str, table: str) -> None:
    sql(
        url,
        f'CREATE TABLE "{table}" (url TEXT PRIMARY KEY, by TEXT)',
        f"INSERT INTO \"{table}\" VALUES ('/a', 'old')",
    )
    async with SqlSink(url, table, key="url") as sink:
        assert await sink.write_fenced([{"url": "/a", "by": "b"}], [FIRST]) == 0  # a row without a claim
        assert (
            await sink.write_fenced(
                [{"url": "/a", "by": "stale"}, {"url": "/c", "by": "b"}], [Fence("response/7", 0), SECOND]
            )
            == 1
        )
    assert rows(url, table) == [("/a", "b", "response/7", 1), ("/c", "b", "response/7", 2)]
    engine = sa.create_engine(url)
    with engine.connect() as db:
        types = {c["name"]: c["type"] for c in sa.inspect(db).get_columns(table)}
    engine.dispose()
    assert isinstance(types["_mocra_fence"], sa.BigInteger | sa.Integer)


async def test_one_batch_holding_both_claims_keeps_the_newer(url: str, table: str) -> None:
    async with SqlSink(url, table, key="url") as sink:
        items = [{"url": "/a", "by": "b"}, {"url": "/a", "by": "a"}, {"url": "/a", "by": "b again"}]
        assert await sink.write_fenced(items, [SECOND, FIRST, SECOND]) == 1
    assert rows(url, table) == [("/a", "b again", "response/7", 2)]


async def test_without_a_key_nothing_is_fenced(tmp_path: pathlib.Path) -> None:
    url = f"sqlite:///{tmp_path}/items.db"
    async with SqlSink(url, "log") as sink:
        assert await sink.write_fenced([{"url": "/a"}], [SECOND]) == 0
        assert await sink.write_fenced([{"url": "/a"}], [FIRST]) == 0
    assert rows(url, "log") == [("/a",), ("/a",)]


async def test_the_item_writer_counts_fenced_items_as_dropped_not_written(
    url: str, table: str, tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture
) -> None:
    stats = Stats()
    jsonl = tmp_path / "items.jsonl"
    async with FanoutSink(SqlSink(url, table, key="url"), JsonlSink(jsonl)) as sink:
        assert isinstance(sink, FencedSink)
        writer = ItemWriter(sink, MiddlewareChain(), stats, SinkSettings(retry_delay=0))
        new = Fence.of(Delivery("7", "response", None, None, 0, 2, 0.0))
        old = Fence.of(Delivery("7", "response", None, None, 0, 1, 0.0))
        async with anyio.create_task_group() as tg:
            tg.start_soon(writer.run)
            await writer.submit([{"url": "/a", "by": "b"}, {"url": "/b", "by": "b"}], new)
            await writer.submit(
                [{"url": "/a", "by": "a"}, {"url": "/b", "by": "a"}, {"url": "/c", "by": "a"}], old
            )
            writer.close()
    assert rows(url, table) == [
        ("/a", "b", "response/7", 2),
        ("/b", "b", "response/7", 2),
        ("/c", "a", "response/7", 1),
    ]
    assert stats.items == 3
    assert stats.dropped["fenced"] == 2
    assert "2 of 3 items refused" in caplog.text
    assert len(jsonl.read_bytes().splitlines()) == 5  # a sink that does not fence takes every item
