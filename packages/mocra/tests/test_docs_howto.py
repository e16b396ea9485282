"""The how-to pages run: docs/howto/resume.md, dead-letters.md, testing.md, and docs/tutorial/cluster.md."""

from __future__ import annotations

import contextlib
import io
import pathlib
import socket
import sys
import types
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from mocra import Ctx, Mocra, Response, Spider, on_item
from mocra._cli import main
from mocra._demo import DemoSite
from mocra_core.testing import LocalServer, ServerRequest, ServerResponse

from .doc_code import page_namespace

DOCS = pathlib.Path(__file__).parents[3] / "docs"
RESUME = DOCS / "howto" / "resume.md"
DEAD_LETTERS = DOCS / "howto" / "dead-letters.md"
TESTING = DOCS / "howto" / "testing.md"
CLUSTER = DOCS / "tutorial" / "cluster.md"
FIRST_SPIDER = DOCS / "tutorial" / "first-spider.md"


@pytest.fixture
def books_module() -> Iterator[Any]:
    """`from books import Books` in a page: the spider of the first tutorial page, as module `books`."""
    module = types.ModuleType("books")
    module.__dict__.update(page_namespace(FIRST_SPIDER, {"__name__": "books"}))
    sys.modules["books"] = module
    try:
        yield module.Books
    finally:
        del sys.modules["books"]


def cli(*args: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(list(args)) == 0
    return out.getvalue()


def test_resume_continues_a_job_without_fetching_again(books_module: Any, tmp_path: pathlib.Path) -> None:
    crawl = page_namespace(RESUME)["crawl"]
    site = DemoSite(seed=5, books=30)
    job, path = str(tmp_path / "job"), str(tmp_path / "books.jsonl")
    with site.run_in_thread() as base:
        books_module.start_urls = [f"{base}/catalogue/page-1.html"]
        first = crawl(job, path, max_pages=2)
        second = crawl(job, path)
    assert first <= 2 and second >= 1
    pages = {path: hits for path, hits in site.server.hits.items() if path.startswith("/catalogue/")}
    assert len(pages) == 3 and set(pages.values()) == {1}  # every page once over both runs
    lines = pathlib.Path(path).read_text().splitlines()
    assert len(lines) == len({line for line in lines})  # both runs' items, each once
    assert len(lines) > 12  # more than page 1's books


class Pages(Spider[dict[str, str]]):
    name = "pages"

    async def parse(self, response: Response, ctx: Ctx[dict[str, str]]) -> None:
        ctx.emit({"url": response.url})
        for href in response.links():
            ctx.follow(href)


def test_dead_letters_are_listed_replayed_and_crawled(tmp_path: pathlib.Path) -> None:
    report = page_namespace(DEAD_LETTERS)["report"]
    text = DEAD_LETTERS.read_text()
    assert "mocra dlq list --job-dir" in text and "mocra dlq replay --job-dir" in text
    broken = {"flaky": True}

    async def page(request: ServerRequest) -> ServerResponse:
        if request.path == "/":
            return ServerResponse(body='<a href="/ok">ok</a><a href="/flaky">flaky</a>')
        if request.path == "/flaky" and broken["flaky"]:
            return ServerResponse(500, "down")
        return ServerResponse(body="<h1>fine</h1>")

    job = str(tmp_path / "job")
    site = LocalServer(fallback=page)
    items: list[dict[str, str]] = []
    settings = (f"crawl.job_dir={job}", "retry.max_retries=0", "crawl.obey_robots=false")
    with site.run_in_thread() as base:
        Pages.start_urls = [f"{base}/"]
        result = Mocra.builder().set(*settings).spider(Pages(), on_item(items.append)).run()
        assert not result.ok and result.dead_letters == 1
        assert report(result) == [f"{base}/flaky: HTTP 500 after 1 attempts"]
        listed = cli("dlq", "list", "--job-dir", job)
        assert f"{base}/flaky\tHTTP 500 after 1 attempts" in listed and "1 dead letters" in listed
        assert "1 dead letters" in cli("status", "--job-dir", job)
        broken["flaky"] = False
        cli("dlq", "replay", "--job-dir", job)
        again = Mocra.builder().set(*settings).spider(Pages(), on_item(items.append)).run()
    assert again.ok and items[-1] == {"url": f"{base}/flaky"}
    assert "0 dead letters" in cli("dlq", "list", "--job-dir", job)


def test_the_testing_page_tests_pass(books_module: Any) -> None:
    namespace = page_namespace(TESTING)
    namespace["test_the_spider_crawls_the_catalogue"]()
    namespace["test_parse_alone"]()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_a_one_node_cluster_crawls(books_module: Any, tmp_path: pathlib.Path) -> None:
    crawl_on_a_cluster = page_namespace(CLUSTER)["crawl_on_a_cluster"]
    site = DemoSite(seed=9, books=30)
    with site.run_in_thread() as base:
        books_module.start_urls = [f"{base}/catalogue/page-1.html"]
        items = crawl_on_a_cluster(
            books_module(), str(tmp_path), f"127.0.0.1:{free_port()}", f"docs-{uuid.uuid4().hex[:8]}"
        )
    assert items >= len(site.expected_api_items())
    assert len((tmp_path / "items.jsonl").read_text().splitlines()) == items
