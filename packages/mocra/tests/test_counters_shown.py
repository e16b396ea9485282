"""The live progress line and the final summary show the same counters, defined once (`Stats`)."""

from __future__ import annotations

import io
import re

import anyio

from mocra import Ctx, Mocra, Response, Spider
from mocra._progress import ProgressLine
from mocra._run import print_summary
from mocra_core.testing import LocalServer, ServerResponse


class Pages(Spider[None]):
    name = "pages"

    def __init__(self, *start: str) -> None:
        self.start_urls = start  # type: ignore[misc]

    async def parse(self, response: Response, ctx: Ctx[None]) -> None:
        if response.url.endswith("/bad"):
            raise ValueError("cannot parse this page")
        ctx.emit({"url": response.url})


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_line_ends_on_the_summary_s_errors_and_dead_letters() -> None:
    terminal, summary = Terminal(), io.StringIO()

    async def crawl() -> None:
        site = LocalServer()
        site.route("/ok", ServerResponse(body=b"fine"))
        site.route("/bad", ServerResponse(body=b"broken"))
        site.route("/busy", ServerResponse(503, body=b"later"))
        async with site.running():
            progress = ProgressLine(terminal)
            builder = Mocra.builder().set(
                "crawl.obey_robots=false", "retry.base=0.01", "retry.max_delay=0.05",
                "retry.max_retries=5", "queue.max_attempts=2",
            )  # fmt: skip
            engine = builder.spider(Pages(site.url("/ok"), site.url("/bad"), site.url("/busy"))).build()
            result = await engine.run(progress=progress.update, progress_interval=0.01)
            progress.finish(result.stats)
            print_summary(result, summary)

    anyio.run(crawl)

    last = terminal.getvalue().rsplit("\r\x1b[2K", 1)[-1]
    shown = re.search(r"errors (\d+) \| dead letters (\d+)", last)
    said = re.search(r"errors (\d+), dead letters (\d+)", summary.getvalue())
    assert shown is not None and said is not None, (last, summary.getvalue())
    assert shown.groups() == said.groups() == ("1", "2"), (last, summary.getvalue())


def test_the_progress_line_and_summary_show_the_autoscalers_concurrency() -> None:
    from mocra_core.engine import CrawlResult, Progress
    from mocra_core.observe import StatsSnapshot

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    on, off = StatsSnapshot(responses=5, concurrency=12), StatsSnapshot(responses=5)
    stream = Tty()
    ProgressLine(stream).update(Progress(stats=on, queued={}))
    ProgressLine(stream).update(Progress(stats=off, queued={}))
    first, second = stream.getvalue().split("\r\x1b[2K")[1:]
    assert "autoscale 12" in first and "autoscale" not in second

    summary = io.StringIO()
    print_summary(CrawlResult(reason="finished", stats=on), summary)
    assert "autoscale: 12 downloads at once" in summary.getvalue()
