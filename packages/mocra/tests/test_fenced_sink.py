"""A worker whose lease expired cannot commit: its late write to the keyed SQL sink is fenced.

Two `mocra run` workers of one job on Redis or NATS (visibility timeout 2 s). Worker a parses page 3 and is
frozen with SIGSTOP in the middle of it, past its lease; worker b takes the page over (its next
delivery: attempt 2), writes its item and finishes the crawl. Then a resumes (SIGCONT) and tries to
write its item of page 3 under its expired claim: refused, counted (`dropped {'fenced': 1}`) and logged,
and the table holds every page's item once, page 3's from b. The table is a SQLite file both processes
write, or a PostgreSQL table.
"""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from mocra_core.testing import LocalServer, ServerRequest, ServerResponse

from .tree_crawl import POSTGRES_URL, SharedJob, kill, redis_or_nats_job, serving, wait_until

pytestmark = pytest.mark.slow

PAGES = 6  # /p/0 links to /p/1 ... /p/5
SLOW_PAGE = "/p/3"  # worker a is frozen while parsing it
SETTINGS = ["queue.visibility_timeout=2", "crawl.obey_robots=false", "crawl.concurrency=4"]

SPIDER = """
import os
import pathlib

import anyio
import sqlalchemy as sa

from mocra import Spider

WORKER = os.environ["FENCE_WORKER"]


def rows_written() -> int:
    engine = sa.create_engine(os.environ["FENCE_DB"])
    try:
        with engine.connect() as db:
            if not sa.inspect(db).has_table(os.environ["FENCE_TABLE"]):
                return 0
            return db.execute(sa.text(f'SELECT count(*) FROM "{os.environ["FENCE_TABLE"]}"')).scalar_one()
    finally:
        engine.dispose()


class Pages(Spider[dict]):
    name = "pages"
    start_urls = ["BASE/p/0"]

    async def parse(self, response, ctx):
        if WORKER == "a" and response.url.endswith("SLOW"):
            # the other pages' items first: frozen in the middle of a commit, a would hold the database's lock
            with anyio.fail_after(30):
                while await anyio.to_thread.run_sync(rows_written) < PAGES - 1:
                    await anyio.sleep(0.02)
            pathlib.Path("a.parsing").write_text(response.url)
            await anyio.sleep(1.0)  # frozen here by the test (SIGSTOP), past the lease
        ctx.emit({"url": response.url, "by": WORKER})
        for href in response.links():
            ctx.follow(href)
"""


async def page(request: ServerRequest) -> ServerResponse:
    """`/p/0` links to every other page; the others are leaves."""
    if request.path == "/p/0":
        return ServerResponse(body="".join(f'<a href="/p/{n}">{n}</a>' for n in range(1, PAGES)))
    return ServerResponse(body="<p>leaf</p>")


@pytest.fixture
def site() -> Iterator[LocalServer]:
    with serving(page) as server:
        yield server


@pytest.fixture(params=["redis", "nats"])
def job(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[SharedJob]:
    """A fresh job on Redis, or on NATS with an LMDB coordination store."""
    with redis_or_nats_job(request.param, tmp_path) as job:
        yield job


@pytest.fixture(params=["sqlite", "postgresql"])
def output(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[tuple[str, str]]:
    """The database URL and table the workers write (dropped afterwards)."""
    url = f"sqlite:///{tmp_path / 'items.db'}" if request.param == "sqlite" else POSTGRES_URL
    table = f"t_{uuid.uuid4().hex[:12]}"
    yield url, table
    engine = sa.create_engine(url)
    with engine.begin() as db:
        db.execute(sa.text(f'DROP TABLE IF EXISTS "{table}"'))
    engine.dispose()


def start_worker(
    tmp_path: pathlib.Path, base_url: str, worker: str, job: SharedJob, output: tuple[str, str]
) -> subprocess.Popen[bytes]:
    spider = tmp_path / "pages.py"
    spider.write_text(
        SPIDER.replace("BASE", base_url).replace("SLOW", SLOW_PAGE).replace("PAGES", str(PAGES))
    )
    url, table = output
    return subprocess.Popen(
        [sys.executable, "-m", "mocra", "run", str(spider), "-o", url, "--table", table, "--key", "url",
         *job.run_args, *(f"-s{s}" for s in SETTINGS)],
        cwd=tmp_path, env={**os.environ, "FENCE_WORKER": worker, "FENCE_DB": url, "FENCE_TABLE": table},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip


def table_rows(output: tuple[str, str]) -> list[tuple[str, str, int]]:
    url, table = output
    engine = sa.create_engine(url)
    with engine.connect() as db:
        query = f'SELECT url, by, _mocra_fence FROM "{table}" ORDER BY url'
        found = [(row[0], row[1], row[2]) for row in db.execute(sa.text(query))]
    engine.dispose()
    return found


def test_a_worker_frozen_past_its_lease_cannot_overwrite_its_successors_item(
    tmp_path: pathlib.Path, site: LocalServer, job: SharedJob, output: tuple[str, str]
) -> None:
    a = start_worker(tmp_path, site.base_url, "a", job, output)
    b: subprocess.Popen[bytes] | None = None
    try:
        wait_until(lambda: (tmp_path / "a.parsing").exists(), [a], 60, f"worker a never parsed {SLOW_PAGE}")
        os.kill(a.pid, signal.SIGSTOP)
        b = start_worker(tmp_path, site.base_url, "b", job, output)
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
    base = site.base_url
    rows = table_rows(output)
    assert [row[0] for row in rows] == sorted(f"{base}/p/{n}" for n in range(PAGES))  # every item, once
    by_url = {url: (by, fence) for url, by, fence in rows}
    assert by_url[f"{base}{SLOW_PAGE}"] == ("b", 2)  # b's item, written under the second lease
    assert "dropped {'fenced': 1}" in a_out.decode(), a_out.decode()
    assert "refused: their worker's lease had expired" in a_out.decode()
    assert "'fenced'" not in b_out.decode()
