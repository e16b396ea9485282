"""Count the asyncio task wake-ups of a crawl, grouped by where each task was waiting.

Run a script (the bench spider by default) with `asyncio.events.Handle._run` wrapped: every wake-up of a
task is counted under the last frames of the coroutine chain it resumes from (e.g. `wait:38` in
`IdleWorkers.wait`). The wrapper slows the crawl down; use the counts, not the times.

    uv run python benchmarks/wakeups.py [--frames 4] [--top 12] \
        -- benchmarks/mocra_bench_spider.py --out /tmp/w.jsonl

The raw aiohttp loop of the shared harness wakes a task about once a page (the response); see
`benchmarks/README.md` ("Task wake-ups and the collector") for mocra's figures.
"""

from __future__ import annotations

import argparse
import asyncio
import asyncio.events
import atexit
import collections
import runpy
import sys
from typing import Any

counts: collections.Counter[str] = collections.Counter()


def waiting_at(task: asyncio.Task[Any], frames: int) -> str:
    """The last `frames` frames (function:line) of the coroutine chain `task` is suspended in."""
    chain: list[str] = []
    coroutine: Any = task.get_coro()
    while coroutine is not None and hasattr(coroutine, "cr_frame"):
        frame = coroutine.cr_frame
        if frame is not None:
            chain.append(f"{frame.f_code.co_name}:{frame.f_lineno}")
        coroutine = coroutine.cr_await
    return " > ".join(chain[-frames:])


def main() -> None:
    """Parse the options, wrap the event loop's handles, run the script."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=4, help="frames of each waiting chain shown")
    parser.add_argument("--top", type=int, default=12, help="waiting places listed")
    parser.add_argument("script", nargs=argparse.REMAINDER, help="-- SCRIPT [ARGS...]")
    args = parser.parse_args()
    default = ["benchmarks/mocra_bench_spider.py", "--out", "/tmp/w.jsonl"]
    script = [a for a in args.script if a != "--"] or default
    run = asyncio.events.Handle._run

    def counted(handle: asyncio.events.Handle) -> None:
        task = getattr(getattr(handle, "_callback", None), "__self__", None)  # a task.s bound __wakeup
        if isinstance(task, asyncio.Task):
            counts[waiting_at(task, args.frames)] += 1
        run(handle)

    asyncio.events.Handle._run = counted  # type: ignore[method-assign,assignment]

    def report() -> None:
        print(f"task wake-ups: {sum(counts.values())}", file=sys.stderr)
        for place, count in counts.most_common(args.top):
            print(f"{count:9d}  {place}", file=sys.stderr)

    atexit.register(report)
    sys.argv = script
    runpy.run_path(script[0], run_name="__main__")


if __name__ == "__main__":
    main()
