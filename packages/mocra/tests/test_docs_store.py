"""docs/store.md runs: its tenants file imports into a store, and its spider crawls the rows it seeds."""

from __future__ import annotations

import pathlib
import re
from typing import Any

import pytest

from mocra import Mocra
from mocra_core.testing import LocalServer, ServerRequest, ServerResponse
from mocra_store import Store, load_tenants

from .doc_code import Collect

DOC = pathlib.Path(__file__).parents[3] / "docs" / "store.md"
TEXT = DOC.read_text()

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def page(request: ServerRequest) -> ServerResponse:
    number = request.query.get("page", ["0"])[0]
    return ServerResponse(body=f'<table><tr class="price"><td class="sku">sku-{number}</td></tr></table>')


async def test_the_tenants_file_imports_and_the_spider_crawls_its_rows(tmp_path: pathlib.Path) -> None:
    (toml,) = re.findall(r"```toml\n(.*?)```", TEXT, flags=re.S)
    server = LocalServer({"/prices": page})
    async with server.running():
        tenants = tmp_path / "tenants.toml"
        # without its schedule, alice's row starts at once (with it, at 06:00)
        tenants.write_text(toml.replace("https://shop.example", server.base_url).split("[[schedules]]")[0])
        url = f"sqlite:///{tmp_path}/mocra.db"
        async with Store.open(url, migrate=True) as store:
            await store.import_tenants(load_tenants(tenants))
        (code,) = re.findall(r"```python\n(.*?)```", TEXT, flags=re.S)
        namespace: dict[str, Any] = {"__name__": "docs_store"}
        exec(compile(code, str(DOC), "exec"), namespace)
        sink = Collect()
        builder = Mocra.builder().set("crawl.obey_robots=false").store(url)
        result = await builder.spider(namespace["Prices"](), sink).run_async()  # type: ignore[arg-type]
    assert result.ok, result.failures
    # alice's row: pages = 3 (module×account over module over the code's 1); bob's row is disabled
    assert sorted((item["account"], item["sku"]) for item in sink.items) == [
        ("alice@shop", f"sku-{n}") for n in (1, 2, 3)
    ]


def test_the_schedule_of_the_tenants_file_is_valid(tmp_path: pathlib.Path) -> None:
    (toml,) = re.findall(r"```toml\n(.*?)```", TEXT, flags=re.S)
    tenants = tmp_path / "tenants.toml"
    tenants.write_text(toml)
    data = load_tenants(tenants)
    assert data["schedules"] == [{"module": "prices", "account": "alice", "cron": "0 6 * * *"}]
