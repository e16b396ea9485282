"""A spider that runs each page's script: a page whose script hangs is stopped, the crawl goes on."""

from __future__ import annotations

from typing import Any

from mocra_core import Mocra
from mocra_core.js import JsTimeout, run_js
from mocra_core.modules import Spider
from mocra_core.sinks import on_item
from mocra_core.testing import LocalServer, ServerResponse

SCRIPTS = {
    "/1": "var t = 1700000000; 'sig-' + (t % 97)",
    "/2": "while (true) {}",  # a page whose script never ends
    "/3": "[1, 2, 3].reduce((a, b) => a + b, 0)",
}


class Signed(Spider[dict[str, Any]]):
    name = "signed"

    async def parse(self, response: Any, ctx: Any) -> None:
        script = response.css_first("script#sign").text()
        try:
            value = await run_js(script, timeout=0.3)
        except JsTimeout:
            value = "timeout"
        ctx.emit({"path": response.url.rsplit("/", 1)[1], "value": value})


def test_a_hanging_page_script_is_stopped_and_the_crawl_goes_on() -> None:
    routes = {
        path: ServerResponse(
            body=f'<html><script id="sign">{code}</script></html>', headers={"Content-Type": "text/html"}
        )
        for path, code in SCRIPTS.items()
    }
    items: list[dict[str, Any]] = []
    server = LocalServer(routes)
    with server.run_in_thread() as base:
        Signed.start_urls = tuple(base + path for path in SCRIPTS)
        result = Mocra.builder().spider(Signed(), on_item(items.append)).set("crawl.obey_robots=false").run()
    assert result.reason == "finished"
    assert sorted((item["path"], item["value"]) for item in items) == [
        ("1", "sig-" + str(1700000000 % 97)), ("2", "timeout"), ("3", 6)
    ]  # fmt: skip
