"""docs/parsing.md runs: its XPath spider and its JavaScript helpers, against pages served on 127.0.0.1."""

from __future__ import annotations

import pathlib
import re
from typing import Any

import anyio

from mocra import Mocra
from mocra_core.testing import LocalServer, ServerResponse

from .doc_code import Collect, block_namespaces

DOC = pathlib.Path(__file__).parents[3] / "docs" / "parsing.md"
TEXT = DOC.read_text()


def crawl(spider_class: type, page: str) -> list[dict[str, Any]]:
    server = LocalServer({"/": ServerResponse(body=page)})
    sink = Collect()
    with server.run_in_thread() as base:
        spider_class.start_urls = [base + "/"]
        result = Mocra.builder().set("crawl.obey_robots=false").spider(spider_class(), sink).run()  # type: ignore[arg-type]
    assert result.ok, result.failures
    return sink.items


def test_the_xpath_spider() -> None:
    xpath, _ = block_namespaces(DOC)
    page = (
        '<html><head><meta name="author" content="Ada"></head><body><ul id="books">'
        '<li><a href="/1">One</a></li><li><a href="/2">Two</a></li></ul></body></html>'
    )
    items = crawl(xpath["Books"], page)
    assert {"title": "One", "href": ["/1"]} in items and {"title": "Two", "href": ["/2"]} in items
    assert {"count": 2.0, "author": "Ada"} in items


def test_the_javascript_spider_and_helper() -> None:
    _, js = block_namespaces(DOC)
    page = '<script id="sign">function sign(q) { return q.split("").reverse().join("") + "!"; }</script>'
    assert crawl(js["Signed"], page) == [{"token": "1=q!"}]
    signed = anyio.run(js["sign_many"], "function sign(q) { return q.length; }", ["a", "bcd"])
    assert signed == [1, 3]


def test_the_docs_name_the_errors_that_exist() -> None:
    import mocra.js

    for name in re.findall(r"`(Js\w+)`", TEXT):
        assert hasattr(mocra.js, name), name
