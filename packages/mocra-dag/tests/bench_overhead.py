"""Scheduler overhead per node in microseconds; not a test.

Run: `uv run python packages/mocra-dag/tests/bench_overhead.py`.
"""

from __future__ import annotations

import tempfile
import time
import uuid
from typing import Any

import anyio

from mocra_dag import (
    EventLog,
    Graph,
    Inputs,
    LmdbRunStateStore,
    MemoryRunStateStore,
    Scheduler,
    SchedulerSettings,
)


async def noop(inputs: Inputs) -> int:
    return 1


def wide(n: int) -> Graph[Any]:
    return Graph({f"n{i}": noop for i in range(n)})


def chain(n: int) -> Graph[Any]:
    return Graph.chain(*[(f"n{i}", noop) for i in range(n)])


async def per_node(make: Any, graph: Graph[Any], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        scheduler = make()
        start = time.perf_counter()
        await scheduler.run(graph, run_id=f"bench-{uuid.uuid4().hex}")
        best = min(best, time.perf_counter() - start)
    return best / len(graph) * 1e6


async def spawn_baseline(n: int) -> float:
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for _ in range(n):
                tg.start_soon(noop, None)
        best = min(best, time.perf_counter() - start)
    return best / n * 1e6


async def main() -> None:
    n = 2000
    print(f"{'baseline: anyio start_soon':<28} {await spawn_baseline(n):6.1f} µs/task")
    settings = SchedulerSettings(max_in_flight=10_000)
    cases = {
        "memory, no events": lambda: Scheduler(settings=settings),
        "memory, EventLog": lambda: Scheduler(settings=settings, events=EventLog()),
        "memory serialise=False": lambda: Scheduler(
            settings=settings, store=MemoryRunStateStore(serialise=False)
        ),
    }
    for name, make in cases.items():
        print(
            f"{name:<28} wide {await per_node(make, wide(n), 5):6.1f} µs/node"
            f"   chain {await per_node(make, chain(n), 5):6.1f} µs/node"
        )
    for sync in (False, True):
        with tempfile.TemporaryDirectory() as path:
            async with LmdbRunStateStore(path, sync=sync) as store:
                make = lambda: Scheduler(settings=settings, store=store)  # noqa: E731
                print(
                    f"{f'LMDB sync={sync}':<28} wide {await per_node(make, wide(500), 3):6.1f} µs/node"
                    f"   chain {await per_node(make, chain(500), 3):6.1f} µs/node"
                )


if __name__ == "__main__":
    anyio.run(main)
