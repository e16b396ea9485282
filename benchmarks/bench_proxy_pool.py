"""Measure mocra-proxy's overhead: one lease plus one report, per request (goal: under 20 µs).

Run: `uv run python benchmarks/bench_proxy_pool.py [--requests N] [--proxies 10,100,1000]`
(defaults: 200,000 requests; 10, 100 and 1,000 proxies).

Each case runs N times `async with pool.lease(domain=...) as lease: await lease.ok(200, latency=0.1)`
in one task on asyncio, with no I/O, so the figure is the pool's own cost per request: picking a proxy
(policy, limits, tier), the lease object, the report (health update, write to the `MemoryState`) and
the release. Median of 5 rounds; CPU time from `time.process_time`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import anyio

from mocra_proxy import Limits, Proxy, ProxyPool, RandomPolicy, RoundRobinPolicy, ScorePolicy, SelectionPolicy

ROUNDS = 5


def say(line: str) -> None:
    """Print one line of the report."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


class ListSource:
    """A fixed list of proxies."""

    name, weight = "bench", 1.0

    def __init__(self, count: int) -> None:
        self.proxies = [
            Proxy.parse(f"http://u:pw@10.{i // 62500}.{i // 250 % 250}.{i % 250 + 1}:8080")
            for i in range(count)
        ]

    async def fetch(self) -> list[Proxy]:
        return self.proxies


async def one_round(pool: ProxyPool, n: int, *, key: str | None) -> float:
    """Seconds of CPU per request over n lease+report cycles."""
    domains = ("a.example", "b.example", "c.example", "d.example")
    started = time.process_time()
    for i in range(n):
        async with pool.lease(domain=domains[i & 3], key=key) as lease:
            await lease.ok(200, latency=0.1)
    return (time.process_time() - started) / n


async def case(
    name: str, n: int, proxies: int, policy: SelectionPolicy, limits: Limits | None, key: str | None
) -> None:
    """Run one configuration and print its median µs per request."""
    async with ProxyPool([ListSource(proxies)], policy=policy, limits=limits) as pool:
        await one_round(pool, n // 10, key=key)  # warm up
        figures = [await one_round(pool, n, key=key) for _ in range(ROUNDS)]
    median = statistics.median(figures) * 1e6
    label = f"{name}, {proxies} proxies"
    say(f"{label:<48} {median:7.2f} µs/request  (min {min(figures) * 1e6:.2f}, max {max(figures) * 1e6:.2f})")


async def main(n: int, counts: list[int]) -> None:
    """All cases, for each pool size."""
    python = sys.version.split()[0]
    say(f"mocra-proxy lease + report, {n:,} requests x {ROUNDS} rounds, Python {python}")
    limits = Limits(rate=1e9, concurrency=100, domain_rate=1e9, domain_concurrency=100)
    for proxies in counts:
        await case("ScorePolicy, no limits", n, proxies, ScorePolicy(), None, None)
        await case("ScorePolicy, all four limits", n, proxies, ScorePolicy(), limits, None)
        await case("RoundRobinPolicy, no limits", n, proxies, RoundRobinPolicy(), None, None)
        await case("RandomPolicy, no limits", n, proxies, RandomPolicy(), None, None)
        await case("sticky key (same proxy each time)", n, proxies, ScorePolicy(), None, "account-1")


def arguments(argv: list[str]) -> argparse.Namespace:
    """The command line: `--requests N --proxies 10,100,1000`."""
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0] if __doc__ else None)
    parser.add_argument("--requests", "-n", type=int, default=200_000, help="requests per round")
    parser.add_argument(
        "--proxies",
        type=lambda text: [int(part) for part in text.split(",")],
        default=[10, 100, 1000],
        help="pool sizes, comma-separated (default 10,100,1000)",
    )
    return parser.parse_args(argv)


if __name__ == "__main__":
    options = arguments(sys.argv[1:])
    anyio.run(main, options.requests, options.proxies)
