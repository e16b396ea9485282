"""Downloader transport benchmark: pages/s and CPU ms/page for each way of fetching, 64 concurrent requests.

Fetches item pages of the shared bench site (`../shared/bench`, nginx on 127.0.0.1:8731) with 64 workers
over a 64-connection pool, in interleaved rounds so every variant sees the same machine noise, and prints
the median (min-max) per variant. No speed threshold: this is a measurement, not a test.

    ../shared/bench/setup.sh          # or: apt nginx; make_site.py --out /tmp/benchsite; nginx_ctl.sh start
    uv run python benchmarks/bench_transport.py --pages 5000 --rounds 3

Variants:
    raw-aiohttp          aiohttp.ClientSession directly (the one-process ceiling)
    client-httpx         httpx.AsyncClient with its own pool (httpcore)
    client-aiohttp       httpx.AsyncClient over httpx_aiohttp.AiohttpTransport
    transport-aiohttp    AiohttpTransport.handle_async_request directly (no AsyncClient.send)
    mocra-httpx          build_downloader(transport="httpx"): HttpxDownloader over httpcore
    mocra-httpx-aiohttp  build_downloader(transport="httpx-aiohttp"): HttpxDownloader over an aiohttp pool
    mocra-aiohttp        build_downloader(transport="aiohttp"): AiohttpDownloader, the default (native)

(Before issue 22, `mocra-aiohttp` named what is now `mocra-httpx-aiohttp`: `transport="aiohttp"` meant
httpx's model over aiohttp's pool.)
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import anyio

Fetch = Callable[[str], Awaitable[int]]
CONCURRENCY = 64


async def _drive(urls: list[str], fetch: Fetch) -> tuple[float, float, int]:
    it: Iterator[str] = iter(urls)
    done = 0

    async def worker() -> None:
        nonlocal done
        for url in it:
            size = await fetch(url)
            assert size > 0, url
            done += 1

    cpu0, t0 = time.process_time(), time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(CONCURRENCY):
            tg.start_soon(worker)
    return time.perf_counter() - t0, time.process_time() - cpu0, done


async def run_variant(name: str, urls: list[str]) -> tuple[float, float, int]:
    import httpx

    limits = httpx.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY)
    if name == "raw-aiohttp":
        import aiohttp

        conn = aiohttp.TCPConnector(limit=CONCURRENCY)
        async with aiohttp.ClientSession(connector=conn) as session:

            async def fetch_raw(url: str) -> int:
                async with session.get(url) as r:
                    return len(await r.read())

            return await _drive(urls, fetch_raw)
    if name in ("client-httpx", "client-aiohttp"):
        from httpx_aiohttp import AiohttpTransport

        transport = AiohttpTransport(limits=limits) if name == "client-aiohttp" else None
        async with httpx.AsyncClient(limits=limits, transport=transport) as client:

            async def fetch_client(url: str) -> int:
                return len((await client.get(url)).content)

            return await _drive(urls, fetch_client)
    if name == "transport-aiohttp":
        from httpx_aiohttp import AiohttpTransport

        async with AiohttpTransport(limits=limits) as tr:

            async def fetch_transport(url: str) -> int:
                resp = await tr.handle_async_request(httpx.Request("GET", url))
                try:
                    return len(b"".join([c async for c in resp.aiter_raw()]))
                finally:
                    await resp.aclose()

            return await _drive(urls, fetch_transport)
    if name.startswith("mocra-"):
        from mocra_core.download import DownloadSettings, build_downloader
        from mocra_core.http import Request

        settings = DownloadSettings(transport=name.removeprefix("mocra-"), max_connections=CONCURRENCY)  # type: ignore[arg-type]
        async with build_downloader(settings) as downloader:

            async def fetch_mocra(url: str) -> int:
                return len((await downloader.download(Request(url))).body)

            return await _drive(urls, fetch_mocra)
    raise SystemExit(f"unknown variant {name!r}")


VARIANTS = (
    "raw-aiohttp",
    "client-httpx",
    "client-aiohttp",
    "transport-aiohttp",
    "mocra-httpx",
    "mocra-httpx-aiohttp",
    "mocra-aiohttp",
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", default="http://127.0.0.1:8731")
    ap.add_argument("--site-dir", default="/tmp/benchsite")
    ap.add_argument("--pages", type=int, default=5000, help="item pages per variant per round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--json", action="store_true", help="print raw results as JSON too")
    a = ap.parse_args()

    manifest = json.loads((Path(a.site_dir) / "_meta" / "manifest.json").read_text())
    fmt, n = manifest["item_path_fmt"], manifest["n_items"]
    variants = [v for v in a.variants.split(",") if v]
    results: dict[str, list[tuple[float, float]]] = {v: [] for v in variants}
    for r in range(a.rounds):
        for i, v in enumerate(variants):  # a different slice of the site per run: no warm client caches
            start = ((r * len(variants) + i) * a.pages) % n
            urls = [a.base + fmt.format(i=(start + k) % n) for k in range(a.pages)]
            elapsed, cpu, done = anyio.run(run_variant, v, urls)
            results[v].append((done / elapsed, 1000 * cpu / done))
            print(f"round {r + 1} {v:18} {done / elapsed:8.0f} pages/s {1000 * cpu / done:6.3f} CPU ms/page")
    print(f"\n{a.pages} pages x {a.rounds} rounds, {CONCURRENCY} concurrent requests\n")
    print("| variant | pages/s median (min-max) | CPU ms/page median |")
    print("|---|---|---|")
    for v, runs in results.items():
        pps = [p for p, _ in runs]
        cpu = [c for _, c in runs]
        spread = f"{statistics.median(pps):,.0f} ({min(pps):,.0f}-{max(pps):,.0f})"
        print(f"| {v} | {spread} | {statistics.median(cpu):.2f} |")
    if a.json:
        print(json.dumps(results))


if __name__ == "__main__":
    main()
