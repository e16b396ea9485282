"""Measure LocalControlPlane: latency per call of reads, writes and lock round trips, with and without fsync.

Run: `uv run python benchmarks/bench_control_plane.py [N]` (default 2,000 calls per row).

Each row runs N calls of one kind on a fresh LMDB directory in a temporary directory, one after the
other from one task (so the figure is the latency of one call, not throughput under concurrency), and
prints the median and the 99th percentile. `sync` rows `fsync` every commit (the default, durable
across power cuts); `nosync` rows only write to the page cache (durable across process crashes).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from typing import TYPE_CHECKING

import anyio

from mocra_cluster import LocalControlPlane

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable


async def measure(call: Callable[[int], Awaitable[object]], n: int) -> tuple[float, float]:
    samples = []
    for i in range(n):
        start = time.perf_counter()
        await call(i)
        samples.append(time.perf_counter() - start)
    samples.sort()
    return statistics.median(samples) * 1e6, samples[int(len(samples) * 0.99)] * 1e6


async def main(n: int) -> None:
    print(f"{'row':<28} {'median µs':>10} {'p99 µs':>10}")
    for sync in (False, True):
        with tempfile.TemporaryDirectory() as path:
            async with LocalControlPlane(path, sync=sync) as plane:
                await plane.set("key", b"x" * 100)
                label = "sync" if sync else "nosync"

                async def lock_cycle(i: int) -> None:
                    token = await plane.acquire_lock("lock", "me", ttl=30)
                    assert token is not None
                    await plane.release_lock("lock", "me", token)

                rows: list[tuple[str, Callable[[int], Awaitable[object]]]] = [
                    ("get", lambda i: plane.get("key")),
                    ("owns_key (1 member)", lambda i: plane.owns_key(b"k%d" % i)),
                    ("set 100 B", lambda i: plane.set(f"k{i}", b"x" * 100)),
                    ("compare_and_set", lambda i: plane.compare_and_set("cas", None, b"1", ttl=0.001)),
                    ("acquire + release lock", lock_cycle),
                    ("publish 100 B", lambda i: plane.publish("topic", b"x" * 100)),
                ]
                for name, call in rows:
                    median, p99 = await measure(call, n)
                    print(f"{label + ' ' + name:<28} {median:>10.1f} {p99:>10.1f}")


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 2_000)
