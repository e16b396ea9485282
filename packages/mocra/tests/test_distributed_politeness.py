"""Per-domain politeness holds across the workers of a job: the limit is per job, not per process."""

from __future__ import annotations

import pathlib
import subprocess
from collections.abc import Iterator

import anyio
import pytest

from mocra_core.testing import LocalServer, ServerRequest, ServerResponse

from .tree_crawl import NATS_URL, REDIS_URL, fresh_job, items, start_crawl

pytestmark = pytest.mark.slow

PAGES = 120
PER_DOMAIN = 2


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
    if request.param == "redis":
        with fresh_job(REDIS_URL) as job:
            yield ["--job", job, "--queue", REDIS_URL]
    else:
        coordination = f"coordination.url=lmdb://{tmp_path / 'coordination'}"
        with fresh_job(NATS_URL) as job:
            yield ["--job", job, "--queue", NATS_URL, "-s", coordination]


def start_worker(
    tmp_path: pathlib.Path, site: Site, name: str, options: list[str]
) -> subprocess.Popen[bytes]:
    crawl = ["crawl.concurrency=8", f"crawl.per_domain_concurrency={PER_DOMAIN}", "crawl.obey_robots=false"]
    return start_crawl(tmp_path, site.server.base_url, name, options, crawl)


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
