"""Compare Bloom-filter libraries for the in-process approximate seen set (why rbloom).

Run (the other candidates are not dependencies of mocra):
    uv run --with fastbloom-rs --with pybloomfiltermmap3 --with pybloom-live --with pyprobables \\
        python benchmarks/bench_bloom_libraries.py [N]

Each filter is sized for N (default 1,000,000) random 16-byte fingerprints at 0.1 %, then takes them in
batches of 1,000 as a seen set does (check, then add what was absent), then is probed with N fresh ones:
ns per fingerprint for both, the probes' false-positive rate and the filter's bits per fingerprint.
pybloom-live's row is its `ScalableBloomFilter` (from 100,000), the only scalable one among them.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

P = 0.001


def say(line: str) -> None:
    """Print one line of the report."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def check_add_each(
    bloom: Any, batch: list[bytes], add: str = "add", has: Callable[..., bool] | None = None
) -> list[bool]:
    """Check-and-add one at a time; return whether each was new."""
    out: list[bool] = []
    adder = getattr(bloom, add)
    for fp in batch:
        if has(fp) if has else fp in bloom:
            out.append(False)
        else:
            adder(fp)
            out.append(True)
    return out


def candidates(
    n: int,
) -> dict[
    str,
    tuple[
        Callable[[], Any],
        Callable[[Any, list[bytes]], list[bool]],
        Callable[[Any, list[bytes]], int],
        Callable[[Any], int],
    ],
]:
    """name → (make, check-and-add a batch, count probes taken for present, bits)."""
    out: dict[str, Any] = {}
    if importlib.util.find_spec("rbloom"):
        import rbloom

        out["rbloom 1.5 (Rust)"] = (
            lambda: rbloom.Bloom(n, P),
            check_add_each,
            lambda b, batch: sum(fp in b for fp in batch),
            lambda b: b.size_in_bits,
        )
    if importlib.util.find_spec("fastbloom_rs"):
        import fastbloom_rs

        def fb_add(b: Any, batch: list[bytes]) -> list[bool]:
            return check_add_each(b, batch, "add_bytes", b.contains_bytes)

        out["fastbloom-rs (Rust)"] = (
            lambda: fastbloom_rs.BloomFilter(n, P),
            fb_add,
            lambda b, batch: sum(b.contains_bytes_batch(batch)),
            lambda b: len(b.get_bytes()) * 8,
        )
    if importlib.util.find_spec("pybloomfilter"):
        import pybloomfilter

        out["pybloomfiltermmap3 (C)"] = (
            lambda: pybloomfilter.BloomFilter(n, P),
            lambda b, batch: [not b.add(fp) for fp in batch],
            lambda b, batch: sum(fp in b for fp in batch),
            lambda b: b.num_bits,
        )
    if importlib.util.find_spec("pybloom_live"):
        import pybloom_live

        out["pybloom-live scalable (Python)"] = (
            lambda: pybloom_live.ScalableBloomFilter(initial_capacity=100_000, error_rate=P),
            lambda b, batch: [not b.add(fp) for fp in batch],
            lambda b, batch: sum(fp in b for fp in batch),
            lambda b: sum(f.num_bits for f in b.filters),
        )
    if importlib.util.find_spec("probables"):
        import probables

        out["pyprobables (Python)"] = (
            lambda: probables.BloomFilter(est_elements=n, false_positive_rate=P),
            lambda b, batch: check_add_each(b, batch, "add", b.check),
            lambda b, batch: sum(b.check(fp) for fp in batch),
            lambda b: b.number_bits,
        )
    return out


def main() -> None:
    """Run every installed candidate and print a table."""
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    added = [os.urandom(16) for _ in range(n)]
    fresh = [os.urandom(16) for _ in range(n)]
    say(f"{n:,} random fingerprints at {P:.1%}; Python {sys.version.split()[0]}")
    say("")
    say("| library | check-and-add ns/fp | probe ns/fp | new answered seen | false positives | bits/fp |")
    say("|---|---|---|---|---|---|")
    for name, (make, add, probe, bits) in candidates(n).items():
        bloom = make()
        t0 = time.perf_counter()
        new = sum(sum(add(bloom, added[i : i + 1000])) for i in range(0, n, 1000))
        t1 = time.perf_counter()
        false = sum(probe(bloom, fresh[i : i + 1000]) for i in range(0, n, 1000))
        t2 = time.perf_counter()
        say(
            f"| {name} | {(t1 - t0) / n * 1e9:,.0f} | {(t2 - t1) / n * 1e9:,.0f} | {n - new:,} "
            f"| {false / n:.5f} | {bits(bloom) / n:.2f} |"
        )


if __name__ == "__main__":
    main()
