"""Per-domain politeness holds across the workers of a job: the limit is per job, not per process."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import uuid
from collections.abc import Iterator

import anyio
import msgspec
import pytest

from mocra_core.testing import LocalServer, ServerRequest, ServerResponse

pytestmark = pytest.mark.slow

PAGES = 120
PER_DOMAIN = 2

SPIDER = """
from mocra import Spider


class Tree(Spider[dict]):
    name = "tree"
    start_urls = ["BASE/p/0"]

    async def parse(self, response, ctx):
        ctx.emit({"id": int(response.url.rsplit("/", 1)[1])})
        for href in response.links():
            ctx.follow(href)
"""


class Site:
    """A tree of pages that records how many requests it served at once."""

    def __init__(self) -> None:
        self.active = 0
        self.most = 0
        self.server = LocalServer(fallback=self.page)

    async def page(self, request: ServerRequest) -> ServerResponse:
        n = int(request.path.rsplit("/", 1)[1])
        if n >= PAGES:
            return ServerResponse(404, "no")
        self.active += 1  # the server's handlers share one event loop: no lock needed
        self.most = max(self.most, self.active)
        try:
            await anyio.sleep(0.02)
        finally:
            self.active -= 1
        links = "".join(f'<a href="/p/{k}">{k}</a>' for k in range(4 * n + 1, 4 * n + 5) if k < PAGES)
        return ServerResponse(body=f"<html><body>{links}</body></html>")


@pytest.fixture
def site() -> Iterator[Site]:
    site = Site()
    with site.server.run_in_thread():
        yield site


@pytest.fixture(params=["redis", "nats+lmdb"])
def backend(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[list[str]]:
    """A fresh job on Redis (a `RedisDomainGate`) or on NATS with an LMDB store (an `LmdbDomainGate`)."""
    job = f"t{uuid.uuid4().hex[:12]}"
    if request.param == "redis":
        yield ["--job", job, "--queue", "redis://127.0.0.1:6379/15"]
        import redis

        with redis.Redis(host="127.0.0.1", port=6379, db=15) as client:
            for key in client.scan_iter(match=f"mocra-{job}*", count=1000):
                client.delete(key)
    else:
        coordination = f"coordination.url=lmdb://{tmp_path / 'coordination'}"
        yield ["--job", job, "--queue", "nats://127.0.0.1:4222", "-s", coordination]
        anyio.run(_delete_nats_streams, f"mocra-{job}")


async def _delete_nats_streams(prefix: str) -> None:
    import nats

    connection = await nats.connect("nats://127.0.0.1:4222")
    try:
        jetstream = connection.jetstream()
        for info in await jetstream.streams_info():
            if info.config.name and info.config.name.startswith(prefix):
                await jetstream.delete_stream(info.config.name)
    finally:
        await connection.close()


def start_worker(
    tmp_path: pathlib.Path, site: Site, name: str, options: list[str]
) -> subprocess.Popen[bytes]:
    spider = tmp_path / "tree.py"
    spider.write_text(SPIDER.replace("BASE", site.server.base_url))
    crawl = ["crawl.concurrency=8", f"crawl.per_domain_concurrency={PER_DOMAIN}", "crawl.obey_robots=false"]
    settings = [*options, *(f"-s{o}" for o in crawl)]
    return subprocess.Popen(
        [sys.executable, "-m", "mocra", "run", str(spider), "-o", str(tmp_path / f"{name}.jsonl"), *settings],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip


def items(path: pathlib.Path) -> list[int]:
    if not path.exists():
        return []
    return [msgspec.json.decode(line)["id"] for line in path.read_bytes().splitlines() if line.endswith(b"}")]


def test_two_workers_never_exceed_the_per_domain_concurrency_together(
    tmp_path: pathlib.Path, site: Site, backend: list[str]
) -> None:
    workers = [start_worker(tmp_path, site, name, backend) for name in ("a", "b")]
    for worker in workers:
        out, _ = worker.communicate(timeout=60)
        assert worker.returncode == 0, out.decode()
    a, b = items(tmp_path / "a.jsonl"), items(tmp_path / "b.jsonl")
    assert set(a) | set(b) == set(range(PAGES))
    assert a and b, "both workers took part"
    assert 1 <= site.most <= PER_DOMAIN  # each worker alone allows 2: without the gate up to 4 at once
    print(f"most requests at once: {site.most}; items a={len(a)} b={len(b)}")
