"""`mocra demo`: serve the offline bookshop and crawl it with `BookSpider`."""

from __future__ import annotations

import pathlib
import signal
from typing import TYPE_CHECKING, TextIO

import anyio
import msgspec

from mocra_core import JsonlSink, Mocra

from ._demo import DemoSite
from ._demo_spider import BookSpider
from ._run import print_summary

if TYPE_CHECKING:
    from mocra_core import CrawlResult

    from ._progress import ProgressDisplay

__all__ = ("crawl_demo", "run_demo", "serve_demo")


async def crawl_demo(site: DemoSite, output: str, progress: ProgressDisplay | None = None) -> CrawlResult:
    """Serve `site` and crawl it into `output` (JSON lines), in the current event loop."""
    async with site.running() as base_url:
        builder = Mocra.builder().spider(BookSpider(base_url + "/"), JsonlSink(output))
        return await builder.run_async(handle_signals=True, progress=progress.update if progress else None)


def run_demo(*, output: str, books: int, stream: TextIO, progress: ProgressDisplay | None = None) -> int:
    """Run the demo, print the summary and check the items against the site's ground truth.

    Returns:
        0 when every expected book was written exactly once, 1 otherwise.
    """
    site = DemoSite(books=books)
    stream.write(f"mocra demo: crawling an offline bookshop of {books} books on 127.0.0.1\n")
    result = anyio.run(crawl_demo, site, output, progress)
    if progress is not None:
        progress.finish(result.stats)
    print_summary(result, stream, output=output)
    lines = pathlib.Path(output).read_bytes().splitlines()
    got = sorted(msgspec.json.decode(line)["url"] for line in lines)
    expected = sorted(item["url"] for item in site.expected_items())
    if got == expected:
        stream.write(
            f"all {len(expected)} books scraped once each; traps handled "
            f"(redirect, duplicates, 503 retry, 404, Latin-1 page, robots.txt)\n"
        )
        return 0
    missing = sorted(set(expected) - set(got))
    stream.write(f"mismatch: {len(got)} items written, {len(expected)} expected; missing {missing[:5]}\n")
    return 1


def serve_demo(*, port: int, books: int, stream: TextIO) -> int:
    """Serve the demo bookshop on 127.0.0.1:`port` until Ctrl-C (for trying your own spider on it)."""

    async def serve() -> None:
        site = DemoSite(books=books, port=port)
        async with site.running() as base_url:
            stream.write(f"demo bookshop on {base_url}/ (Ctrl-C to stop)\n")
            stream.flush()
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    return

    anyio.run(serve)
    return 0
