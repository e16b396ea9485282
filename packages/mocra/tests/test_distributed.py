"""One crawl, many workers: `mocra run --queue …` on several processes shares one job and loses nothing
when a worker is killed with SIGKILL."""

from __future__ import annotations

import pathlib
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from mocra_core.engine.download._domain_feeder import PARK_PER_WORKER
from mocra_core.testing import LocalServer

from .tree_crawl import (
    POSTGRES_URL,
    REDIS_URL,
    SharedJob,
    fresh_job,
    items,
    kill,
    page_hits,
    serving,
    start_crawl,
    tree_page,
    wait_until,
)

pytestmark = pytest.mark.slow

PAGES = 300
CONCURRENCY = 8
PARSE_WORKERS = 4
LINKS = 3  # per page
# What a worker holds when it dies: its downloads, the requests its download feeder parked for their
# domain (at most half its park for one domain, as here), the requests whose responses its parse workers
# hold (direct parse: a request stays leased until its response is parsed), as many parsed ones whose acks
# are on their way (the parse stage's acker holds at most one per parse worker), and one request its
# download feeder leased for the next free worker. Each is fetched again, and since dedup cannot tell
# whether an attempt that died reached parse, its links that were seen already are queued again past dedup.
PARKED = CONCURRENCY * PARK_PER_WORKER // 2
HELD = CONCURRENCY + PARKED + 2 * PARSE_WORKERS + 1
IN_FLIGHT = HELD * (1 + LINKS)


@pytest.fixture
def site() -> Iterator[LocalServer]:
    with serving(tree_page(PAGES, 0.01)) as server:
        yield server


@pytest.fixture
def upsert_table(shared_job: SharedJob) -> Iterator[str]:
    """A PostgreSQL table name for the job's items, dropped afterwards."""
    name = f"items_{shared_job.job}"
    yield name
    engine = sa.create_engine(POSTGRES_URL)
    with engine.begin() as db:
        db.execute(sa.text(f'DROP TABLE IF EXISTS "{name}"'))
    engine.dispose()


def table_ids(table: str) -> list[int]:
    engine = sa.create_engine(POSTGRES_URL)
    with engine.connect() as db:
        ids = [row[0] for row in db.execute(sa.text(f'SELECT id FROM "{table}"'))]
    engine.dispose()
    return ids


def start_worker(
    tmp_path: pathlib.Path, site: LocalServer, name: str, options: list[str]
) -> subprocess.Popen[bytes]:
    crawl = [
        f"crawl.concurrency={CONCURRENCY}",
        f"crawl.parse_workers={PARSE_WORKERS}",
        "crawl.obey_robots=false",
    ]
    return start_crawl(tmp_path, site.base_url, name, options, crawl)


def test_two_workers_share_a_crawl_and_survive_a_sigkill(
    tmp_path: pathlib.Path, site: LocalServer, shared_job: SharedJob, upsert_table: str
) -> None:
    # each worker writes its items to a JSONL file of its own and, keyed by id, to one shared table
    upsert = ["-o", POSTGRES_URL, "--table", upsert_table, "--key", "id"]
    options = [*shared_job.run_args, "-s", "queue.visibility_timeout=3", *upsert]
    first = start_worker(tmp_path, site, "a", options)
    second = start_worker(tmp_path, site, "b", options)

    # kill a mid-crawl: once it wrote 30 items, or, if b got going first (on a loaded machine b can crawl
    # most of the 300 pages before a writes 30), once a is crawling and a third of the job is done
    def a_mid_crawl() -> bool:
        a, b = len(items(tmp_path / "a.jsonl")), len(items(tmp_path / "b.jsonl"))
        return a >= 30 or (a >= 1 and a + b >= PAGES // 3)

    wait_until(a_mid_crawl, [first], 60, "worker a made no progress")
    kill(first)

    out, _ = second.communicate(timeout=120)

    assert second.returncode == 0, out.decode()
    a, b = items(tmp_path / "a.jsonl"), items(tmp_path / "b.jsonl")
    assert b, "the second worker did not share the crawl"
    assert set(a) | set(b) == set(range(PAGES))  # nothing lost
    hits = page_hits(site)
    fetched_twice = [p for p, h in hits.items() if h > 1]
    assert max(hits.values()) <= 3  # leased by the dead worker, then re-queued by a re-parsed parent too
    assert len(fetched_twice) <= IN_FLIGHT, fetched_twice  # only what the killed worker had in flight
    both = Counter(a) + Counter(b)
    emitted_twice = [n for n, count in both.items() if count > 1]
    # refetched pages and re-parsed responses; the sink keyed by id (an upsert) keeps one of each
    assert len(emitted_twice) <= IN_FLIGHT + PARSE_WORKERS
    assert sorted(table_ids(upsert_table)) == list(range(PAGES))  # each item exactly once
    print(f"refetched {len(fetched_twice)} pages, {len(emitted_twice)} items emitted twice")
    assert site.hits["/p/0"] == 1  # seeded exactly once


def test_a_worker_started_again_after_ctrl_c_keeps_its_output(
    tmp_path: pathlib.Path, site: LocalServer, shared_job: SharedJob
) -> None:
    # the job lives on the broker, so running the same command again continues it: `-o` appends
    options = [*shared_job.run_args, "-s", "queue.visibility_timeout=3"]
    first = start_worker(tmp_path, site, "a", options)
    wait_until(lambda: len(items(tmp_path / "a.jsonl")) >= 30, [first], 60, "the worker made no progress")
    first.send_signal(signal.SIGINT)
    out, _ = first.communicate(timeout=60)
    assert first.returncode == 130, out.decode()
    before = items(tmp_path / "a.jsonl")
    assert 30 <= len(before) < PAGES

    again = start_worker(tmp_path, site, "a", options)  # the same command
    out, _ = again.communicate(timeout=120)

    assert again.returncode == 0, out.decode()
    after = items(tmp_path / "a.jsonl")
    assert after[: len(before)] == before  # kept: the second run did not empty the file
    assert set(after) == set(range(PAGES))


OTHER_SPIDER = """
from mocra import Spider


class Other(Spider[dict]):
    name = "other"
    start_urls = ["BASE/p/1"]

    async def parse(self, response, ctx):
        ctx.emit({"id": -1})
"""


def test_a_worker_with_other_spiders_is_refused(tmp_path: pathlib.Path, site: LocalServer) -> None:
    with fresh_job(REDIS_URL) as job:
        options = ["--queue", REDIS_URL, "--job", job]
        first = start_worker(tmp_path, site, "a", options)
        out, _ = first.communicate(timeout=120)
        assert first.returncode == 0, out.decode()
        other = tmp_path / "other.py"
        other.write_text(OTHER_SPIDER.replace("BASE", site.base_url))

        result = subprocess.run(
            [sys.executable, "-m", "mocra", "run", str(other), *options, "-s", "crawl.obey_robots=false"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip

    assert result.returncode == 2, result.stderr
    assert f"job {job!r} runs 'tree'; this run has 'other', without 'tree'" in result.stderr
    assert "Traceback" not in result.stderr
