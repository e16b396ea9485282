"""Measure the Raft control plane's seen set on one node: heap per URL and time per fingerprint as it grows.

Run: `uv run python benchmarks/bench_raft_seen_set.py [N]` (default 400,000)

Applies `AddIfAbsent` commands of 1,000 random fingerprints to a `StateMachine` over a `MemoryStateStore`,
as every node of a Raft cluster does for a job's seen set (`ClusterSeenSet`), without the network: what
the set costs each node, not the consensus. Heap is tracemalloc's count (so times are slower than
without it); the snapshot is the store's encoded content, written to disk at each compaction.
"""

from __future__ import annotations

import os
import sys
import time
import tracemalloc

from mocra_cluster import MemoryStateStore
from mocra_cluster._commands import AddIfAbsent
from mocra_cluster._machine import StateMachine


def main() -> None:
    """Fill the set in quarters and print the time and heap of each."""
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 400_000
    quarter = n // 4
    tracemalloc.start()
    machine = StateMachine(MemoryStateStore())
    base = tracemalloc.get_traced_memory()[0]
    last = time.perf_counter()
    for done in range(1_000, n + 1, 1_000):
        machine.apply(AddIfAbsent(key="mocra-job/seen", members=[os.urandom(16) for _ in range(1_000)]))
        if done % quarter == 0:
            now = time.perf_counter()
            heap = (tracemalloc.get_traced_memory()[0] - base) / done
            sys.stdout.write(
                f"{done:>10,} URLs: {(now - last) / quarter * 1e6:6.1f} µs/fp, {heap:.0f} B/URL\n"
            )
            last = now
    sys.stdout.write(f"snapshot: {len(machine.store.snapshot()) / n:.0f} B/URL\n")


if __name__ == "__main__":
    main()
