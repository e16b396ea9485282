"""Watch a run's lifecycle: each part's state changes as they happen, then the run's outcome.

Serve the demo bookshop first (`uv run mocra demo --serve`), then `uv run python examples/watch_run.py`.
Press Ctrl-C while it runs to see the parts drain (`crawl.drain_timeout`) before they stop.
"""

import anyio

from mocra import Ctx, Mocra, Response, Spider, on_item


class Titles(Spider[str]):
    name = "titles"
    start_urls = ["http://127.0.0.1:8000/catalogue/page-1.html"]

    async def parse(self, response: Response, ctx: Ctx[str]) -> None:
        for title in response.css("article.product_pod h3 a"):
            ctx.emit(title.attributes.get("title") or title.text())
        for href in response.links("li.next a"):
            ctx.follow(href)


async def main() -> None:
    engine = Mocra.builder().spider(Titles(), on_item(lambda title: None)).build()

    async def watch() -> None:
        with engine.events() as changes:  # the history so far, then each change; ends with the run
            async for change in changes:
                why = f" ({change.cause})" if change.cause else ""
                print(f"{change.part:>12}: {change.old or '-'} -> {change.new}{why}")

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch)
        result = await engine.run(handle_signals=True)
    print(f"{result.reason}: {result.stats.items} titles, engine {engine.state}, parts {engine.parts()}")


if __name__ == "__main__":
    anyio.run(main)
