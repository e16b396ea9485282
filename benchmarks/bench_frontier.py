"""Measure the frontier at scale: peak RSS and bytes per URL for 1 million queued requests.

Run: `uv run python benchmarks/bench_frontier.py [--n 1000000] [--batch 1000] [--variants V,V] [--drain N]`

Pushes N distinct `Request`s through the engine's `Frontier` (depth check, dedup in the seen-set, publish
to the request queue) in batches, as parse workers do, then drains the queue (consume + ack in batches of
`--batch`). Each variant runs in a fresh child process, so `ru_maxrss` is that variant's own peak:

- `memory`: `MemoryQueue` + `MemorySeenSet` (the default single-process engine: everything in RAM).
- `lmdb`: `LmdbQueue` (payloads encoded by `EngineCodec`) + `MemorySeenSet`: the frontier spilled to disk.
- `lmdb-seen`: `LmdbQueue` + `LmdbSeenSet`: frontier and seen-set on disk (a job dir's layout).
- `default`: the queue and seen set a run with default settings makes (`BackendPlan.decide(Settings())`:
  `SpillingQueue`, spilling past `queue.spill_threshold`, + `MemorySeenSet`).
- `default-approx`: the same with `dedup.approximate = true` (`MemoryBloomSeenSet`).

Bytes per URL = (peak RSS − RSS before the first push) / N; the baseline is the interpreter and imports.
RSS counts file-backed pages of LMDB's memory map too (`RssFile`, reclaimable page cache): both parts are
reported at the end of the push. URLs look like follow-ups of a real crawl (~60 characters, 100 hosts,
each request with a node, a callback and a depth), every one distinct and therefore admitted.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from typing import Any

import anyio

VARIANTS = ("memory", "lmdb", "lmdb-seen", "default", "default-approx")


def say(line: str) -> None:
    """Print one line of the report."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def rss_parts() -> dict[str, float]:
    """Current VmRSS, RssAnon and RssFile of this process, in MiB (Linux)."""
    out: dict[str, float] = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssFile"):
                out[key] = int(value.split()[0]) / 1024
    return out


def peak_rss_mb() -> float:
    """Peak RSS of this process so far, in MiB (`ru_maxrss` is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def url(i: int) -> str:
    """The i-th distinct URL, ~60 characters, over 100 hosts."""
    return f"https://shop{i % 100}.example.com/items/{i}.html?ref=listing&page={i // 20}"


def dir_size(path: str) -> int:
    """Bytes used on disk by the files under `path`."""
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            total += os.stat(os.path.join(root, name)).st_blocks * 512
    return total


def default_backends(*, approximate: bool) -> tuple[Any, Any]:
    """The request queue and seen set of a run with default settings (plus `dedup.approximate`)."""
    from mocra_core.config import Settings
    from mocra_core.engine._plan import BackendPlan

    settings = Settings.from_mapping({"dedup": {"approximate": True}} if approximate else {})
    plan = BackendPlan.decide(settings, job="bench")
    return plan.make_queue(), plan.make_seen(plan.make_coordination())


async def run_variant(variant: str, n: int, batch: int, tmp: str, drain: int) -> dict[str, Any]:
    """Push `n` requests through a Frontier, then drain `drain` of them; return the measurements."""
    from mocra_core.dedup import LmdbSeenSet, MemorySeenSet, SeenSet
    from mocra_core.engine import EngineCodec
    from mocra_core.engine._frontier import REQUESTS, Frontier
    from mocra_core.http import Request, Routing
    from mocra_core.observe import Stats
    from mocra_core.queue import LmdbQueue, MemoryQueue, QueueBackend

    queue: QueueBackend
    seen: SeenSet
    if variant.startswith("default"):
        queue, seen = default_backends(approximate=variant == "default-approx")
    elif variant == "memory":
        queue = MemoryQueue()
    else:
        queue = LmdbQueue(os.path.join(tmp, "queue"), codec=EngineCodec())
    if variant.startswith("default"):
        pass
    elif variant == "lmdb-seen":
        seen = LmdbSeenSet(os.path.join(tmp, "seen"), map_size=4 << 30)
    else:
        seen = MemorySeenSet()
    stats = Stats()
    frontier = Frontier(queue, seen, stats)
    routing = Routing("bench/spider", depth=2)  # a page's follow-ups share one
    base = rss_parts()
    t0 = time.perf_counter()
    admitted = 0
    for start in range(0, n, batch):
        stop = min(start + batch, n)
        requests = [Request(url(i), callback="parse_item") for i in range(start, stop)]
        admitted += len(
            await frontier.submit(requests, routing, scope="bench")
        )  # as the engine scopes a spider
    push_s = time.perf_counter() - t0
    pushed = rss_parts()
    peak_after_push = peak_rss_mb()
    pending = await queue.pending(REQUESTS)
    disk = dir_size(tmp)
    sys.stderr.write(
        f"pushed {n:,} in {push_s:.0f} s ({n / push_s:,.0f}/s), peak RSS {peak_after_push:,.0f} MB "
        f"(anon {pushed['RssAnon']:,.0f}, file {pushed['RssFile']:,.0f})\n"
    )
    t1 = time.perf_counter()
    drained = 0
    while drained < drain:
        deliveries = await queue.consume(
            REQUESTS, group="download", max_messages=min(batch, drain - drained), wait=0
        )
        if not deliveries:
            break
        drained += len(deliveries)
        if drained % 1_000_000 < len(deliveries):
            sys.stderr.write(f"drained {drained:,}: {drained / (time.perf_counter() - t1):,.0f}/s so far\n")
        await queue.ack(deliveries)
    drain_s = time.perf_counter() - t1
    drained_rss = rss_parts()
    await seen.aclose()
    await queue.aclose()
    return {
        "variant": variant,
        "n": n,
        "batch": batch,
        "admitted": admitted,
        "pending_after_push": pending,
        "drained": drained,
        "push_s": push_s,
        "push_per_s": n / push_s,
        "drain_s": drain_s,
        "drain_per_s": drained / drain_s if drain_s else None,
        "rss_before_mb": base["VmRSS"],
        "rss_after_push_mb": pushed["VmRSS"],
        "rss_anon_after_push_mb": pushed["RssAnon"],
        "rss_file_after_push_mb": pushed["RssFile"],
        "peak_rss_after_push_mb": peak_after_push,
        "rss_anon_after_drain_mb": drained_rss["RssAnon"],
        "rss_file_after_drain_mb": drained_rss["RssFile"],
        "peak_rss_mb": peak_rss_mb(),
        "bytes_per_url": (peak_after_push - base["VmRSS"]) * 2**20 / n,
        "anon_bytes_per_url": (pushed["RssAnon"] - base["RssAnon"]) * 2**20 / n,
        "disk_mb": disk / 2**20,
        "disk_bytes_per_url": disk / n,
    }


def child(variant: str, n: int, batch: int, drain: int) -> None:
    """Run one variant in this process and print its result as JSON."""
    with tempfile.TemporaryDirectory(prefix="bench_frontier_") as tmp:
        result = anyio.run(run_variant, variant, n, batch, tmp, drain)
    say(json.dumps(result))


def main() -> None:
    """Run each variant in a child process and print a table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="distinct requests to push")
    ap.add_argument("--batch", type=int, default=1000, help="requests per submit (and per consume)")
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated: " + ", ".join(VARIANTS))
    ap.add_argument("--drain", type=int, help="drain only this many (default: all)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    drain = args.n if args.drain is None else args.drain
    if args.child:
        child(args.child, args.n, args.batch, drain)
        return
    python = sys.version.split()[0]
    say(f"{args.n:,} distinct requests, submitted in batches of {args.batch:,}; Python {python}")
    say("")
    say(
        "| variant | RSS before MB | peak RSS after push MB | bytes/URL (RSS) | bytes/URL (anon) "
        "| anon / file MB after push | peak RSS MB (drain incl.) | anon / file MB after drain | disk MB "
        "| push URLs/s | drain URLs/s |"
    )
    say("|---|---|---|---|---|---|---|---|---|---|---|")
    for variant in args.variants.split(","):
        cmd = [sys.executable, __file__, "--child", variant, "--n", str(args.n), "--batch", str(args.batch)]
        cmd += ["--drain", str(drain)]
        out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
        if r["admitted"] != args.n or r["drained"] != drain:
            raise SystemExit(f"{variant}: admitted {r['admitted']}, drained {r['drained']} of {args.n}")
        say(
            f"| {variant} | {r['rss_before_mb']:,.0f} | {r['peak_rss_after_push_mb']:,.0f} "
            f"| {r['bytes_per_url']:,.0f} | {r['anon_bytes_per_url']:,.0f} "
            f"| {r['rss_anon_after_push_mb']:,.0f} / {r['rss_file_after_push_mb']:,.0f} "
            f"| {r['peak_rss_mb']:,.0f} "
            f"| {r['rss_anon_after_drain_mb']:,.0f} / {r['rss_file_after_drain_mb']:,.0f} "
            f"| {r['disk_mb']:,.0f} | {r['push_per_s']:,.0f} | {r['drain_per_s']:,.0f} |"
        )


if __name__ == "__main__":
    main()
