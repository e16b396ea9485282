"""One bad item fails only its own page: the other pages of its sink batch are written, once."""

from __future__ import annotations

import pathlib
from typing import TYPE_CHECKING, Any

import anyio
import msgspec
import pytest
import sqlalchemy as sa

from mocra_core import CsvSink, JsonlSink, MocraBuilder, Response, Spider
from mocra_core.config import SinkSettings
from mocra_core.engine.parse._items import ItemWriter, SinkWriteFailed
from mocra_core.middleware import MiddlewareChain
from mocra_core.modules import Ctx
from mocra_core.observe import Stats
from mocra_core.sinks import CallbackSink, SqlSink
from mocra_core.testing import LocalServer, ServerRequest, ServerResponse

if TYPE_CHECKING:
    from collections.abc import Sequence

    from mocra_core import DataSink

pytestmark = pytest.mark.anyio

PAGES = ("p1", "p2", "bad", "p3", "p4", "p5")


class Unencodable:
    """An object no sink can encode."""


async def write_together(writer: ItemWriter, submissions: Sequence[list[Any]]) -> list[BaseException | None]:
    """Submit each list from its own task, all into the same batch; what each submit raised."""
    outcomes: list[BaseException | None] = [None] * len(submissions)

    async def submit(index: int) -> None:
        try:
            await writer.submit(submissions[index])
        except SinkWriteFailed as exc:
            outcomes[index] = exc

    async with anyio.create_task_group() as tg:
        tg.start_soon(writer.run)
        # as if a write ran: an idle writer lets each submitter write alone, these must gather first
        writer._writing = True
        async with anyio.create_task_group() as submitters:
            for index in range(len(submissions)):
                submitters.start_soon(submit, index)
            await anyio.wait_all_tasks_blocked()
            writer._writing = False
            writer._written.set()
        writer.close()
    return outcomes


def lines(path: pathlib.Path) -> list[Any]:
    return [msgspec.json.decode(line) for line in path.read_bytes().splitlines()]


async def test_only_the_submitter_of_an_unencodable_item_fails(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "items.jsonl"
    stats = Stats()
    submissions = [[{"page": n, "i": i} for i in range(3)] for n in range(6)]
    submissions[2][1] = {"page": 2, "i": Unencodable()}
    async with JsonlSink(path) as sink:
        writer = ItemWriter(sink, MiddlewareChain(), stats, SinkSettings(max_retries=2, retry_delay=0))
        outcomes = await write_together(writer, submissions)

    assert [outcome is None for outcome in outcomes] == [True, True, False, True, True, True]
    assert "cannot be encoded as JSON" in str(outcomes[2])
    written = lines(path)
    assert written == [item for n, items in enumerate(submissions) if n != 2 for item in items]  # once each
    assert stats.items == 15


async def test_a_sink_failing_again_and_again_on_one_item_fails_only_its_submitter() -> None:
    """A failure the sink calls retryable is retried first; when it persists, the culprit is found."""
    got: list[Any] = []

    def take(item: Any) -> None:
        if item == "poison":
            raise ValueError("cannot take poison")
        got.append(item)

    class AllOrNothing(CallbackSink):
        async def write(self, items: Sequence[object]) -> None:
            if "poison" in items:
                raise ValueError("cannot take poison")
            await super().write(items)

    writer = ItemWriter(
        AllOrNothing(take), MiddlewareChain(), Stats(), SinkSettings(max_retries=2, retry_delay=0)
    )
    outcomes = await write_together(writer, [["a", "b"], ["c", "poison"], ["d"], ["e", "f"]])

    assert [outcome is None for outcome in outcomes] == [True, False, True, True]
    assert "cannot take poison" in str(outcomes[1])
    assert got == ["a", "b", "d", "e", "f"]


async def test_items_larger_than_a_batch_are_isolated_in_chunks(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "items.jsonl"
    submissions = [[{"page": n, "i": i} for i in range(4)] for n in range(5)]
    submissions[3][3] = {"page": 3, "i": Unencodable()}
    async with JsonlSink(path) as sink:
        writer = ItemWriter(sink, MiddlewareChain(), Stats(), SinkSettings(batch_size=3, retry_delay=0))
        outcomes = await write_together(writer, submissions)

    assert [outcome is None for outcome in outcomes] == [True, True, True, False, True]
    good = [item for n, items in enumerate(submissions) if n != 3 for item in items]
    assert [item for item in lines(path) if item["page"] != 3] == good


async def test_a_storage_middleware_that_keeps_one_item_per_item_does_not_stop_isolation(
    tmp_path: pathlib.Path,
) -> None:
    class Stamp:
        async def before_write(self, items: Sequence[Any]) -> Sequence[Any]:
            return [{**item, "stamped": True} for item in items]

    chain = MiddlewareChain()
    chain.add(Stamp())
    path = tmp_path / "items.jsonl"
    submissions = [[{"page": 0}], [{"page": 1, "x": Unencodable()}], [{"page": 2}]]
    async with JsonlSink(path) as sink:
        outcomes = await write_together(
            ItemWriter(sink, chain, Stats(), SinkSettings(retry_delay=0)), submissions
        )

    assert [outcome is None for outcome in outcomes] == [True, False, True]
    assert lines(path) == [{"page": 0, "stamped": True}, {"page": 2, "stamped": True}]


# --- through the engine: the page of the bad item is dead-lettered, the others are written ---------------


class Site:
    """A front page linking to PAGES; `all_fetched` is set once every page has been served."""

    def __init__(self, server: LocalServer) -> None:
        self.server = server
        self.all_fetched = anyio.Event()
        links = "".join(f'<a href="/{name}.html">{name}</a>' for name in PAGES)
        server.route("/", ServerResponse(body=f"<html><body>{links}</body></html>"))
        for name in PAGES:
            server.route(f"/{name}.html", self._page)

    async def _page(self, request: ServerRequest) -> ServerResponse:
        if all(self.server.hits[f"/{name}.html"] for name in PAGES):
            self.all_fetched.set()
        return ServerResponse(body="<p>page</p>")


class Gated:
    """Holds the first batch (the front page's item) until every page is fetched and parsed, so the
    items of all six pages gather into the next batch together."""

    def __init__(self, sink: DataSink, site: Site) -> None:
        self._sink = sink
        self._site = site
        self._first = True

    async def open(self) -> None:
        await self._sink.open()

    async def write(self, items: Sequence[object]) -> None:
        if self._first:
            self._first = False
            await self._site.all_fetched.wait()
            await anyio.sleep(0.2)  # let the six parses submit their items
        await self._sink.write(items)

    async def close(self) -> None:
        await self._sink.close()


def spider(bad_value: object) -> type[Spider[dict[str, Any]]]:
    class Pages(Spider[dict[str, Any]]):
        name = "pages"

        async def parse(self, response: Response, ctx: Ctx[dict[str, Any]]) -> None:
            page = response.url.rsplit("/", 1)[1].removesuffix(".html") or "front"
            ctx.emit({"page": page, "n": 1})
            ctx.emit({"page": page, "n": bad_value if page == "bad" else 2})
            for href in response.links():
                ctx.follow(href)

    return Pages


@pytest.fixture
async def site() -> Any:
    server = LocalServer()
    async with server.running():
        yield Site(server)


async def crawl(builder: MocraBuilder, site: Site, sink: DataSink, bad_value: object) -> Any:
    pages = spider(bad_value)
    pages.start_urls = (site.server.url("/"),)
    return await builder.set("sink.retry_delay=0").spider(pages(), Gated(sink, site)).run_async()


def expected_pages() -> list[str]:
    return sorted(["front", *(name for name in PAGES if name != "bad")])


async def test_an_unencodable_item_dead_letters_only_its_page(
    builder: MocraBuilder, site: Site, tmp_path: pathlib.Path
) -> None:
    path = tmp_path / "items.jsonl"

    result = await crawl(builder, site, JsonlSink(path), Unencodable())

    items = lines(path)
    assert sorted(item["page"] for item in items if item["n"] == 1) == expected_pages()
    assert sorted(item["page"] for item in items if item["n"] == 2) == expected_pages()  # each once
    [failure] = result.failures
    assert failure.url.endswith("/bad.html")
    assert "cannot be encoded as JSON" in failure.reason
    assert result.stats.items == len(items) == 12


async def test_a_csv_item_that_is_not_a_record_dead_letters_only_its_page(
    builder: MocraBuilder, site: Site, tmp_path: pathlib.Path
) -> None:
    path = tmp_path / "items.csv"

    result = await crawl(builder, site, CsvSink(path), Unencodable())

    rows = path.read_text().splitlines()
    assert rows[0] == "page,n"
    assert sorted(row.split(",")[0] for row in rows[1:] if row.endswith(",2")) == expected_pages()
    [failure] = result.failures
    assert failure.url.endswith("/bad.html")
    assert "cannot be encoded" in failure.reason


async def test_a_row_that_breaks_a_constraint_dead_letters_only_its_page(
    builder: MocraBuilder, site: Site, tmp_path: pathlib.Path
) -> None:
    url = f"sqlite:///{tmp_path}/items.db"
    engine = sa.create_engine(url)
    with engine.begin() as db:
        db.execute(sa.text("CREATE TABLE items (page TEXT NOT NULL, n INTEGER NOT NULL CHECK (n > 0))"))

    result = await crawl(builder, site, SqlSink(url, "items"), -1)

    with engine.connect() as db:
        table = db.execute(sa.text("SELECT page, n FROM items")).all()
    engine.dispose()
    assert sorted(page for page, n in table if n == 1) == expected_pages()
    assert sorted(page for page, n in table if n == 2) == expected_pages()
    assert len(table) == 12
    [failure] = result.failures
    assert failure.url.endswith("/bad.html")
    assert "CHECK constraint failed" in failure.reason


async def test_a_sink_that_is_down_fails_every_submitter_without_trying_each_alone() -> None:
    attempts = 0

    class Down(CallbackSink):
        async def write(self, items: Sequence[object]) -> None:
            nonlocal attempts
            attempts += 1
            raise ConnectionRefusedError("connection refused")

    writer = ItemWriter(Down(print), MiddlewareChain(), Stats(), SinkSettings(max_retries=2, retry_delay=0))
    outcomes = await write_together(writer, [[n] for n in range(16)])

    assert all("connection refused" in str(outcome) for outcome in outcomes)
    assert attempts < 3 + 16  # the batch's 3 attempts, then a few halves: not one write per submitter


async def test_a_submitter_finding_the_writer_idle_writes_its_items_itself() -> None:
    # no hand-over to the writer task and back: the writer task is not even running here
    got: list[Any] = []
    writer = ItemWriter(CallbackSink(got.append), MiddlewareChain(), Stats(), SinkSettings())
    with anyio.fail_after(5):
        await writer.submit(["a", "b"])
    assert got == ["a", "b"]


async def test_items_submitted_during_a_write_are_written_next_as_one_batch() -> None:
    writes: list[list[Any]] = []

    class Slow(CallbackSink):
        async def write(self, items: Sequence[object]) -> None:
            await anyio.sleep(0.05)
            writes.append(list(items))

    writer = ItemWriter(Slow(lambda item: None), MiddlewareChain(), Stats(), SinkSettings())
    async with anyio.create_task_group() as tg:
        tg.start_soon(writer.run)
        async with anyio.create_task_group() as submitters:
            submitters.start_soon(writer.submit, ["first"])
            await anyio.sleep(0.01)  # the first submitter writes
            for item in ("x", "y", "z"):
                submitters.start_soon(writer.submit, [item])
        writer.close()
    assert writes == [["first"], ["x", "y", "z"]]  # one write at a time, in order; group commit
