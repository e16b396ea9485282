"""Measure the Redis seen sets: memory (`MEMORY USAGE`), time per fingerprint and false positives.

Run:
    uv run python benchmarks/bench_seen_set_redis.py --n 1000000                  # exact vs approximate
    uv run python benchmarks/bench_seen_set_redis.py --n 25000000 --only bloom --capacity 100000000 \\
        --key bench-bloom --start 0 --keep      # then --start 25000000 …: a series filled over several runs

Fingerprints are blake2b digests of their index (16 bytes, as `Request.fingerprint`), added in batches of
`--batch` through `add_if_absent`, one batch in flight. Afterwards it re-offers a sample of the added ones
(each must be answered seen) and offers `--probe` fresh ones (indices from 2**40): the share answered seen
is the false-positive rate, at the fill the set has then (the probes are added too). Memory is
`MEMORY USAGE … SAMPLES 0` of the set's keys. `--keep` leaves the keys for a next run with `--start`.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from typing import TYPE_CHECKING

import anyio
import redis

from mocra_core.dedup import RedisBloomSeenSet, RedisSeenSet

if TYPE_CHECKING:
    from mocra_core.dedup import SeenSet

URL = "redis://127.0.0.1:6379/9"


def say(line: str) -> None:
    """Print one line of the report."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def fps(start: int, stop: int) -> list[bytes]:
    """The fingerprints of indices [start, stop)."""
    return [hashlib.blake2b(i.to_bytes(8, "little"), digest_size=16).digest() for i in range(start, stop)]


def memory(keys: list[str | bytes]) -> int:
    """Bytes Redis reports for `keys`."""
    raw = redis.Redis.from_url(URL)
    return sum(int(raw.memory_usage(key, samples=0) or 0) for key in keys)


async def run(kind: str, args: argparse.Namespace) -> None:
    """Fill one set and report its figures."""
    seen: SeenSet
    if kind == "bloom":
        bloom = RedisBloomSeenSet(
            URL,
            namespace=args.key,
            capacity=args.capacity or args.start + args.n,
            false_positive_rate=args.rate,
        )
        seen = bloom
    else:
        seen = RedisSeenSet(URL, namespace=args.key + "-exact")
    async with seen:
        added, busy = 0, 0.0
        for lo in range(args.start, args.start + args.n, args.chunk):
            batch = fps(lo, min(lo + args.chunk, args.start + args.n))
            t0 = time.perf_counter()
            for i in range(0, len(batch), args.batch):
                added += sum(await seen.add_if_absent(batch[i : i + args.batch]))
            busy += time.perf_counter() - t0
        keys: list[str | bytes] = [f"{args.key}-exact:seen"]
        if isinstance(seen, RedisBloomSeenSet):
            keys = [*await seen.keys()]
        used = memory(keys)
        total = args.start + args.n
        again = fps(args.start, args.start + args.n)[:: max(1, args.n // 100_000)]
        missed = sum(await seen.add_if_absent(again))
        t0 = time.perf_counter()
        probes = fps(2**40 + args.start, 2**40 + args.start + args.probe)
        false = 0
        for i in range(0, len(probes), args.batch):
            false += sum(not new for new in await seen.add_if_absent(probes[i : i + args.batch]))
        if isinstance(seen, RedisBloomSeenSet):
            keys = [*await seen.keys()]  # the probes may have started a filter
        say(
            f"| {kind} | {args.start:,}–{total:,} | {args.n / busy:,.0f} | {busy / args.n * 1e6:.2f} "
            f"| {added:,} | {used / 1e6:,.1f} | {used / total:.2f} | {missed} | {false / args.probe:.5f} "
            f"| {await seen.count():,} |"
        )
        if not args.keep:
            redis.Redis.from_url(URL).delete(*keys)


def main() -> None:
    """Parse the options and run each kind."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="fingerprints to add in this run")
    ap.add_argument("--start", type=int, default=0, help="index of the first (to go on with a --keep series)")
    ap.add_argument("--batch", type=int, default=1_000)
    ap.add_argument("--chunk", type=int, default=1_000_000, help="fingerprints made at a time (not timed)")
    ap.add_argument("--probe", type=int, default=1_000_000, help="fresh fingerprints offered at the end")
    ap.add_argument("--capacity", type=int, default=0, help="of the approximate set (default: start + n)")
    ap.add_argument("--rate", type=float, default=0.001, help="false_positive_rate of the approximate set")
    ap.add_argument("--only", choices=("exact", "bloom"), help="one kind only")
    ap.add_argument("--key", default="bench-seen", help="namespace of the keys (in Redis db 9)")
    ap.add_argument("--keep", action="store_true", help="leave the keys for a later run with --start")
    args = ap.parse_args()
    say(f"Redis {redis.Redis.from_url(URL).info('server')['redis_version']}; batches of {args.batch:,}")
    say("")
    say(
        "| set | fingerprints | adds/s | µs/fp | answered new | MB (MEMORY USAGE) | B/fp | seen answered new "
        "| false positives | count |"
    )
    say("|---|---|---|---|---|---|---|---|---|---|")
    for kind in ("exact", "bloom"):
        if args.only in (None, kind):
            anyio.run(run, kind, args)


if __name__ == "__main__":
    main()
