"""docs/modules.md runs: its module logs in, walks the JSON list, fans out and merges, on the demo shop; the
calls, attributes and settings the page names exist."""

from __future__ import annotations

import pathlib
import re

from mocra import Ctx, Mocra, Module, Node, TaskCtx
from mocra._demo import DemoSite
from mocra_core.config import Settings

from .doc_code import Collect, page_namespace

MODULES = pathlib.Path(__file__).parents[3] / "docs" / "modules.md"
TEXT = MODULES.read_text()


def test_the_module_logs_in_walks_the_list_fans_out_and_merges() -> None:
    namespace = page_namespace(MODULES)
    assert namespace["BASE"] == "http://127.0.0.1:8000"  # `mocra demo --serve`
    site = DemoSite(seed=4, books=30)
    sink = Collect()
    with site.run_in_thread() as base:
        namespace["BASE"] = base
        result = Mocra.builder().spider(namespace["Shop"](), sink).run()
    assert result.ok, result.failures
    assert site.logins["alice"] == 1  # once for the account, not per request
    books = [item for item in sink.items if not isinstance(item, dict)]
    (summary,) = [item for item in sink.items if isinstance(item, dict)]  # the merge ran once
    expected = {book["id"]: book for book in site.expected_api_items()}
    assert sorted(book.id for book in books) == sorted(expected)
    assert all(book.price == expected[book.id]["price"] for book in books)
    prices = [book["price"] for book in expected.values()]
    assert summary == {"books": len(expected), "mean_price": round(sum(prices) / len(prices), 2)}


def test_the_routing_calls_and_the_attributes_named_exist() -> None:
    table = TEXT.split("## Routing")[1].split("\n## ")[0]
    calls = re.findall(r"^\| `ctx\.(\w+)\(", table, flags=re.M)
    assert len(calls) == 6
    assert all(hasattr(Ctx, call) for call in calls), calls
    assert all(hasattr(TaskCtx, call) for call in ("get", "add", "emit", "inputs", "meta"))
    for name in ("advance", "fan_in", "id"):
        assert f"`{name}" in TEXT and hasattr(Node, name), name
    for name in ("accounts", "relogin_on", "cron", "cron_misfire", "autostart"):
        assert f"`{name}" in TEXT and hasattr(Module, name), name
    assert "cron_max_fires" in TEXT and hasattr(Settings().crawl, "cron_max_fires")
