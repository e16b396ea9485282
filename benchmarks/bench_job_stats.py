"""What saving a job dir's counts after every ack costs: CPU per page of a `--job-dir` crawl with and without.

    uv run python benchmarks/bench_job_stats.py [--pages 3000] [--rounds 3]

The site (a tree of `--pages` pages, no delay) runs in a child process, so the figure is the crawler's own
CPU (`time.process_time`). Rounds alternate the two variants; the ratio of the medians is reported
("without" replaces the saver with a no-op: counts are then saved once a second only, as before).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from mocra_core import Ctx, Mocra, Response, Spider
from mocra_core.engine import JobDir

SITE = """
import sys, threading
from mocra_core.testing import LocalServer, ServerResponse
PAGES = int(sys.argv[1])
async def page(request):
    n = int(request.path.rsplit("/", 1)[1])
    links = "".join(f'<a href="/p/{k}">{k}</a>' for k in (2 * n + 1, 2 * n + 2) if k < PAGES)
    return ServerResponse(body=f"<html><body>{links}</body></html>")
server = LocalServer(fallback=page)
with server.run_in_thread():
    print(server.base_url, flush=True)
    sys.stdin.read()
"""


class Tree(Spider[dict[str, Any]]):
    name = "tree"

    def __init__(self, base: str) -> None:
        self.start_urls = [f"{base}/p/0"]  # type: ignore[misc]

    async def parse(self, response: Response, ctx: Ctx[dict[str, Any]]) -> None:
        ctx.emit({"url": response.url})
        for href in response.links():
            ctx.follow(href)


def crawl(base: str, saving: bool) -> tuple[float, int]:
    """CPU seconds of one job-dir crawl of the site and its pages."""
    original = JobDir.counts_saver
    if not saving:
        JobDir.counts_saver = lambda self, stats: lambda: None  # type: ignore[method-assign]
    try:
        with tempfile.TemporaryDirectory() as job:
            builder = Mocra.builder().set("crawl.obey_robots=false", "crawl.concurrency=16").job_dir(job)
            started = time.process_time()
            result = builder.spider(Tree(base)).run()
            return time.process_time() - started, result.stats.responses
    finally:
        JobDir.counts_saver = original  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    site = subprocess.Popen(
        [sys.executable, "-c", SITE, str(args.pages)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert site.stdout is not None
    base = site.stdout.readline().strip()
    try:
        per_page: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(args.rounds):
            for saving in (False, True):
                cpu, pages = crawl(base, saving)
                per_page[saving].append(cpu / pages * 1000)
    finally:
        site.communicate("")
    with_, without = statistics.median(per_page[True]), statistics.median(per_page[False])
    print(f"CPU ms/page over {args.rounds} rounds of {args.pages} pages (median):")
    print(f"  counts saved once a second        {without:.3f}  {per_page[False]}")
    print(f"  counts saved after every ack too  {with_:.3f}  {per_page[True]}")
    print(f"  ratio {with_ / without:.3f}")


if __name__ == "__main__":
    main()
