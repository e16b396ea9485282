"""A response queued after its download's lease ran out is parsed under the download's claim, and loses.

Two `mocra run` workers of one job on Redis, responses through their topic (`crawl.direct_parse=false`,
visibility timeout 2 s). Worker a is frozen with SIGSTOP while it downloads page 3 (the server holds the
page back), past its lease; worker b takes the request over (its next delivery: attempt 2), downloads
the page, parses it, writes its item and finishes the crawl. Then a resumes (SIGCONT), gets its page,
queues the response and parses it: the response carries the fence of a's download (attempt 1), so its
item is refused (`dropped {'fenced': 1}`) and the table holds every page's item once, page 3's from b.
Before, a's response was parsed as a claim of its own (another message) and its item replaced b's.
"""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
from collections.abc import Iterator

import anyio
import pytest
import sqlalchemy as sa

from mocra_core.testing import LocalServer, ServerRequest, ServerResponse

from .tree_crawl import SharedJob, kill, redis_or_nats_job, serving, wait_until

pytestmark = pytest.mark.slow

PAGES = 6  # /p/0 links to /p/1 ... /p/5
SLOW_PAGE = "/p/3"  # worker a is frozen while downloading it
TABLE = "items"
SETTINGS = ["queue.visibility_timeout=2", "crawl.direct_parse=false", "crawl.obey_robots=false"]

SPIDER = """
import os

from mocra import Spider


class Pages(Spider[dict]):
    name = "pages"
    start_urls = ["BASE/p/0"]

    async def parse(self, response, ctx):
        ctx.emit({"url": response.url, "by": os.environ["FENCE_WORKER"]})
        for href in response.links():
            ctx.follow(href)
"""


def rows_written(db: pathlib.Path) -> int:
    engine = sa.create_engine(f"sqlite:///{db}")
    try:
        with engine.connect() as conn:
            if not sa.inspect(conn).has_table(TABLE):
                return 0
            return int(conn.execute(sa.text(f'SELECT count(*) FROM "{TABLE}"')).scalar_one())
    finally:
        engine.dispose()


@pytest.fixture
def job(tmp_path: pathlib.Path) -> Iterator[SharedJob]:
    with redis_or_nats_job("redis", tmp_path) as job:
        yield job


@pytest.fixture
def site(tmp_path: pathlib.Path) -> Iterator[LocalServer]:
    """`/p/0` links to every other page; the first request of page 3 is held back (a is frozen meanwhile)."""
    held: list[str] = []

    async def page(request: ServerRequest) -> ServerResponse:
        if request.path == "/p/0":
            return ServerResponse(body="".join(f'<a href="/p/{n}">{n}</a>' for n in range(1, PAGES)))
        if request.path == SLOW_PAGE and not held:
            held.append(request.path)
            # the other pages' items first: frozen in the middle of a commit, a would hold the database's lock
            with anyio.fail_after(30):
                while await anyio.to_thread.run_sync(rows_written, tmp_path / "items.db") < PAGES - 1:  # noqa: ASYNC110
                    await anyio.sleep(0.02)  # another process writes them: polled
            (tmp_path / "a.downloading").write_text(request.path)
            await anyio.sleep(1.0)  # a is frozen here by the test (SIGSTOP), past its lease
        return ServerResponse(body="<p>leaf</p>")

    with serving(page) as server:
        yield server


def start_worker(
    tmp_path: pathlib.Path, base_url: str, worker: str, job: SharedJob
) -> subprocess.Popen[bytes]:
    spider = tmp_path / "pages.py"
    spider.write_text(SPIDER.replace("BASE", base_url))
    url = f"sqlite:///{tmp_path / 'items.db'}"
    return subprocess.Popen(
        [sys.executable, "-m", "mocra", "run", str(spider), "-o", url, "--table", TABLE, "--key", "url",
         *job.run_args, *(f"-s{s}" for s in SETTINGS)],
        cwd=tmp_path, env={**os.environ, "FENCE_WORKER": worker},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip


def table_rows(db: pathlib.Path) -> list[tuple[str, str, str, int]]:
    engine = sa.create_engine(f"sqlite:///{db}")
    with engine.connect() as conn:
        query = f'SELECT url, by, _mocra_claim, _mocra_fence FROM "{TABLE}" ORDER BY url'
        found = [(row[0], row[1], row[2], row[3]) for row in conn.execute(sa.text(query))]
    engine.dispose()
    return found


def test_a_response_of_a_download_whose_lease_ran_out_cannot_overwrite_the_newer_one(
    tmp_path: pathlib.Path, site: LocalServer, job: SharedJob
) -> None:
    a = start_worker(tmp_path, site.base_url, "a", job)
    b: subprocess.Popen[bytes] | None = None
    try:
        wait_until(lambda: (tmp_path / "a.downloading").exists(), [a], 60, f"a never asked for {SLOW_PAGE}")
        os.kill(a.pid, signal.SIGSTOP)
        b = start_worker(tmp_path, site.base_url, "b", job)
        b_out, _ = b.communicate(timeout=60)  # b takes page 3 over once a's lease expires, and finishes
        assert b.returncode == 0, b_out.decode()
        os.kill(a.pid, signal.SIGCONT)
        a_out, _ = a.communicate(timeout=60)
    finally:
        for worker in (a, b):
            if worker is not None and worker.poll() is None:
                os.kill(worker.pid, signal.SIGCONT)
                kill(worker)

    assert a.returncode == 0, a_out.decode()
    assert site.hits[SLOW_PAGE] == 2, a_out.decode()  # a's download went on, and b's
    base = site.base_url
    rows = table_rows(tmp_path / "items.db")
    assert [row[0] for row in rows] == sorted(f"{base}/p/{n}" for n in range(PAGES))  # every item, once
    by_url = {url: (by, claim.partition("/")[0], fence) for url, by, claim, fence in rows}
    assert by_url[f"{base}{SLOW_PAGE}"] == ("b", "request", 2)  # b's, under the request's second lease
    assert "dropped {'fenced': 1}" in a_out.decode(), a_out.decode()
    assert "'fenced'" not in b_out.decode()
