"""The live progress display and the final summary show the same counters, defined once (`Stats`)."""

from __future__ import annotations

import io
import re

import anyio
from rich.console import Console

from mocra import Ctx, Mocra, Response, Spider
from mocra._progress import ProgressDisplay
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


def terminal_display() -> tuple[io.StringIO, ProgressDisplay]:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=100, color_system=None)
    return out, ProgressDisplay(out, console=console)


def test_the_progress_display_ends_on_the_summary_s_errors_and_dead_letters() -> None:
    (terminal, progress), summary = terminal_display(), io.StringIO()

    async def crawl() -> None:
        site = LocalServer()
        site.route("/ok", ServerResponse(body=b"fine"))
        site.route("/bad", ServerResponse(body=b"broken"))
        site.route("/busy", ServerResponse(503, body=b"later"))
        async with site.running():
            builder = Mocra.builder().set(
                "crawl.obey_robots=false", "retry.base=0.01", "retry.max_delay=0.05",
                "retry.max_retries=5", "queue.max_attempts=2",
            )  # fmt: skip
            engine = builder.spider(Pages(site.url("/ok"), site.url("/bad"), site.url("/busy"))).build()
            result = await engine.run(progress=progress.update, progress_interval=0.01)
            progress.finish(result.stats)
            print_summary(result, summary)

    anyio.run(crawl)

    last = terminal.getvalue().rsplit("\x1b[2K", 1)[-1]
    shown = re.search(r"errors (\d+) \| dead letters (\d+)", last)
    said = re.search(r"errors (\d+), dead letters (\d+)", summary.getvalue())
    assert shown is not None and said is not None, (last, summary.getvalue())
    assert shown.groups() == said.groups() == ("1", "2"), (last, summary.getvalue())


def test_the_progress_display_and_summary_show_the_autoscalers_concurrency() -> None:
    from mocra_core.engine import CrawlResult, Progress
    from mocra_core.observe import StatsSnapshot

    on, off = StatsSnapshot(responses=5, concurrency=12), StatsSnapshot(responses=5)
    frames = []
    for stats in (on, off):
        stream, display = terminal_display()
        display.update(Progress(stats=stats, queued={}))
        display.close()
        frames.append(stream.getvalue())
    assert re.search(r"autoscale\s+12", frames[0]) and "autoscale" not in frames[1]

    summary = io.StringIO()
    print_summary(CrawlResult(reason="finished", stats=on), summary)
    assert "autoscale: 12 downloads at once" in summary.getvalue()
