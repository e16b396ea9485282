"""Measure the seen-sets: memory per fingerprint and insert time, at 1 million fingerprints.

Run: `uv run python benchmarks/bench_seen_set.py [N] [BATCH]` (defaults 1,000,000 and 1,000).

Compares `MemorySeenSet` with the plain-Python sets it was chosen over, times `LmdbSeenSet`, and
measures the approximate `MemoryBloomSeenSet` (`dedup.approximate`) at 0.1 %: sized for N, and from a
capacity of N/16 (growing to 5 filters). Its filters live in Rust (tracemalloc does not see them): its
bytes are the filters' bits, and its false positives the share of N fresh fingerprints answered seen.
The Redis seen sets: `benchmarks/bench_seen_set_redis.py`.
Memory is what tracemalloc counts after inserting, the keys included (the `set[bytes]` row copies
each fingerprint, as a set that outlives its requests must keep them); peak is the highest point,
growth included. Time comes from a separate run without tracemalloc, which slows allocation down.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import tracemalloc
from typing import TYPE_CHECKING

import anyio

from mocra_core.dedup import LmdbSeenSet, MemoryBloomSeenSet, MemorySeenSet

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from mocra_core.dedup import SeenSet

Chunks = list[list[bytes]]


def say(line: str) -> None:
    """Print one line of the report."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def fill(seen: SeenSet, chunks: Sequence[Sequence[bytes]]) -> None:
    """Add every batch to `seen`."""
    for chunk in chunks:
        await seen.add_if_absent(chunk)


def fill_set_bytes(chunks: Chunks) -> object:
    """A `set[bytes]` of (copies of) the full fingerprints."""
    s: set[bytes] = set()
    for chunk in chunks:
        for fp in chunk:
            if fp not in s:
                s.add(bytes(memoryview(fp)))
    return s


def fill_set_int(chunks: Chunks) -> object:
    """A `set[int]` of the fingerprints' first 8 bytes."""
    s: set[int] = set()
    for chunk in chunks:
        for fp in chunk:
            key = int.from_bytes(fp[:8], "little")
            if key not in s:
                s.add(key)
    return s


def fill_memory_seen_set(chunks: Chunks) -> object:
    """A `MemorySeenSet`."""
    seen = MemorySeenSet()
    anyio.run(fill, seen, chunks)
    return seen


def measure(name: str, run: Callable[[Chunks], object], chunks: Chunks, n: int) -> None:
    """Report the time per insert and the memory per fingerprint of `run`."""
    start = time.perf_counter()
    run(chunks)
    elapsed = time.perf_counter() - start
    tracemalloc.start()
    kept = run(chunks)
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del kept
    say(f"{name:<24} {elapsed / n * 1e9:6.0f} ns/fp  {current / n:6.1f} B/fp  {peak / n:6.1f} B/fp peak")


async def all_seen(chunks: Chunks) -> float:
    """Return the seconds to offer every fingerprint again to a full `MemorySeenSet`."""
    seen = MemorySeenSet()
    await fill(seen, chunks)
    start = time.perf_counter()
    for chunk in chunks:
        assert not any(await seen.add_if_absent(chunk))
    return time.perf_counter() - start


async def lmdb(chunks: Chunks, directory: str) -> float:
    """Return the seconds to fill an `LmdbSeenSet` in `directory`."""
    async with LmdbSeenSet(directory) as seen:
        start = time.perf_counter()
        await fill(seen, chunks)
        return time.perf_counter() - start


async def bloom(chunks: Chunks, n: int, capacity: int) -> str:
    """Fill a `MemoryBloomSeenSet` of `capacity`, probe it with fresh fingerprints; return its report line."""
    seen = MemoryBloomSeenSet(capacity=capacity, false_positive_rate=0.001)
    start = time.perf_counter()
    new = 0
    for chunk in chunks:
        new += sum(await seen.add_if_absent(chunk))
    elapsed = time.perf_counter() - start
    false = 0
    for fp in (os.urandom(16) for _ in range(n)):
        false += await seen.contains(fp)
    name = f"Bloom, capacity N/{n // capacity}" if capacity < n else "Bloom, capacity N"
    return (
        f"{name:<24} {elapsed / n * 1e9:6.0f} ns/fp  {seen.size_in_bits / 8 / n:6.1f} B/fp  "
        f"{seen.filters} filter(s), {n - new} new taken for seen, {false / n:.5f} false positives"
    )


def main() -> None:
    """Run every measurement and print a table."""
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    size = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000
    prints = [os.urandom(16) for _ in range(n)]
    chunks = [prints[i : i + size] for i in range(0, n, size)]
    say(f"{n:,} random 16-byte fingerprints in batches of {size:,}; Python {sys.version.split()[0]}")
    measure("set[bytes] (16 B keys)", fill_set_bytes, chunks, n)
    measure("set[int] (8 B prefix)", fill_set_int, chunks, n)
    measure("MemorySeenSet", fill_memory_seen_set, chunks, n)
    say(f"{'MemorySeenSet, all seen':<24} {anyio.run(all_seen, chunks) / n * 1e9:6.0f} ns/fp")
    with tempfile.TemporaryDirectory() as tmp:
        elapsed = anyio.run(lmdb, chunks, tmp + "/seen")
        on_disk = os.path.getsize(tmp + "/seen/data.mdb")
    say(f"{'LmdbSeenSet':<24} {elapsed / n * 1e9:6.0f} ns/fp  {on_disk / n:6.1f} B/fp on disk")
    say(anyio.run(bloom, chunks, n, n))
    say(anyio.run(bloom, chunks, n, n // 16))


if __name__ == "__main__":
    main()
