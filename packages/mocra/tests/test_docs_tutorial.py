"""The tutorial pages run: docs/tutorial/first-spider.md, items.md and following.md, against the demo shop."""

from __future__ import annotations

import json
import pathlib
import re
from typing import Any

import pytest

from mocra import Mocra
from mocra._demo import DemoSite

from .doc_code import Collect, page_namespace

TUTORIAL = pathlib.Path(__file__).parents[3] / "docs" / "tutorial"
FIRST_SPIDER = TUTORIAL / "first-spider.md"
ITEMS = TUTORIAL / "items.md"
FOLLOWING = TUTORIAL / "following.md"


@pytest.fixture(scope="module")
def shop() -> Any:
    site = DemoSite(seed=3, books=30)
    with site.run_in_thread() as base:
        yield site, base


def titles(site: DemoSite) -> set[str]:
    return {book["title"] for book in site.expected_api_items()}


def catalogue_titles(got: set[str], site: DemoSite) -> bool:
    """Every book, and at most the one trap the catalogue lists beside them (its detail page is missing)."""
    return titles(site) <= got and len(got - titles(site)) <= 1


def test_first_spider_collects_every_book_and_writes_jsonl(shop: Any, tmp_path: pathlib.Path) -> None:
    site, base = shop
    namespace = page_namespace(FIRST_SPIDER)
    books = namespace["Books"]
    assert books.start_urls == ["http://127.0.0.1:8000/catalogue/page-1.html"]
    books.start_urls = [f"{base}/catalogue/page-1.html"]

    sink = Collect()
    result = Mocra.builder().spider(books(), sink).run()
    assert result.ok, result.failures
    assert catalogue_titles({item["title"] for item in sink.items}, site)
    assert all(item["price"].startswith("£") for item in sink.items)

    path = tmp_path / "books.jsonl"
    count = namespace["crawl"](str(path))
    assert count == len(sink.items) and len(path.read_text().splitlines()) == count


def test_typed_items_and_the_custom_sink(shop: Any, tmp_path: pathlib.Path) -> None:
    site, base = shop
    namespace = page_namespace(ITEMS)
    books = namespace["Books"]
    books.start_urls = [f"{base}/catalogue/page-1.html"]

    cheapest = namespace["cheapest"]()
    assert isinstance(cheapest, namespace["Book"])
    assert cheapest.price <= min(book["price"] for book in site.expected_api_items())

    path = tmp_path / "books.json"
    sink = namespace["JsonArraySink"](str(path))
    assert Mocra.builder().spider(books(), sink).run().ok
    written = json.loads(path.read_text())
    assert catalogue_titles({book["title"] for book in written}, site)


def test_following_logs_in_and_walks_the_api(shop: Any) -> None:
    site, base = shop
    namespace = page_namespace(FOLLOWING)
    members = namespace["Members"]
    assert members.base == "http://127.0.0.1:8000"
    members.base = base
    logins_before = site.logins["alice"]

    sink = Collect()
    result = Mocra.builder().spider(members(), sink).run()
    assert result.ok, result.failures
    assert site.logins["alice"] == logins_before + 1
    expected = {book["id"]: book for book in site.expected_api_items()}
    assert sorted(item["id"] for item in sink.items) == sorted(expected)
    for item in sink.items:
        assert item["price"] == expected[item["id"]]["price"]
        assert item["listed_as"] == expected[item["id"]]["title"]


def test_the_request_table_names_every_request_argument() -> None:
    import inspect

    from mocra import Request

    text = FOLLOWING.read_text()
    for name in inspect.signature(Request).parameters:
        assert f"`{name}`" in text, name


def test_the_response_table_names_attributes_that_exist() -> None:
    from mocra import Response

    table = FOLLOWING.read_text().split("## `Response`")[1].split("\n## ")[0]
    for name in re.findall(r"^\| `(\w+)", table, flags=re.M):
        assert hasattr(Response, name), name
