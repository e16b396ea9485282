"""The summary of a worker of a job on a broker: what its run did, what the job did (all workers, all runs).

Each worker adds its counts to the job's coordination store once a second and at the end of its run, so a
worker killed with SIGKILL loses the counts it made since its last save: at most its last second of pages
(and the downloads it had in flight, which another worker fetches and counts again). The site records who
fetched each page when (every worker sends its own User-Agent), so the tests measure that bound.
"""

from __future__ import annotations

import dataclasses
import pathlib
import re
import subprocess
import time
from collections.abc import Iterator

import pytest

from mocra_core.testing import Handler, LocalServer, ServerRequest, ServerResponse

from .paced import Paced
from .reaping import reaping
from .tree_crawl import (
    SharedJob,
    items,
    kill,
    mocra,
    page_hits,
    redis_or_nats_job,
    serving,
    start_crawl,
    tree_page,
    wait_until,
)

pytestmark = pytest.mark.slow

PAGES = 800
DELAY = 0.04  # per page: with 8 downloads at once job-wide (the gate), the crawl takes 4 s or more
CONCURRENCY = 8
PARSE_WORKERS = 4
SAVE_INTERVAL = 1.0  # a worker adds its counts to the job's once a second
SLACK = 0.5  # seconds a save may come late on a loaded machine
HELD = CONCURRENCY + 2 * PARSE_WORKERS + 1  # what a worker holds when it dies (see test_distributed.py)

RUN = re.compile(r"^finished: (\d+) pages, (\d+) items in ([\d.]+)s", re.M)
JOB = re.compile(
    r"^  job so far, (\d+) runs: (\d+) pages, (\d+) items, (\d+) errors, (\d+) dead letters in ([\d.]+)s",
    re.M,
)


@dataclasses.dataclass(frozen=True)
class Counts:
    runs: int
    pages: int
    items: int
    errors: int
    dead: int
    elapsed: float


def job_line(out: str) -> Counts | None:
    """The counts of the summary's "job so far" line, if it has one."""
    found = JOB.search(out)
    if found is None:
        return None
    runs, pages, items_, errors, dead, elapsed = found.groups()
    return Counts(int(runs), int(pages), int(items_), int(errors), int(dead), float(elapsed))


def run_line(out: str) -> tuple[int, int, float]:
    """Pages, items and seconds of the summary's first line (the run's own)."""
    found = RUN.search(out)
    assert found is not None, out
    return int(found.group(1)), int(found.group(2)), float(found.group(3))


class FetchLog:
    """A handler recording when each page was fetched and by whom (the User-Agent), then serving it."""

    def __init__(self, handler: Handler) -> None:
        self._handler = handler
        self.fetches: list[tuple[float, str]] = []

    async def __call__(self, request: ServerRequest) -> ServerResponse:
        if request.path.startswith("/p/"):
            self.fetches.append((time.monotonic(), request.headers.get("user-agent", "")))
        return await self._handler(request)

    def by(self, agent: str, *, since: float = 0.0) -> int:
        """Pages `agent` fetched from `since` (time.monotonic) on."""
        return sum(1 for at, who in self.fetches if who == agent and at >= since)


@pytest.fixture(params=["redis", "nats"])
def broker_job(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[SharedJob]:
    """A fresh job on Redis (coordination on the same Redis) or NATS (coordination in LMDB)."""
    with redis_or_nats_job(request.param, tmp_path) as job:
        yield job


@pytest.fixture
def paced() -> Paced:
    return Paced(tree_page(PAGES, 0.0), DELAY)


@pytest.fixture
def fetch_log(paced: Paced) -> FetchLog:
    return FetchLog(paced)


@pytest.fixture
def site(fetch_log: FetchLog) -> Iterator[LocalServer]:
    with serving(fetch_log) as server:
        yield server


def start_worker(
    tmp_path: pathlib.Path, site: LocalServer, name: str, job: SharedJob
) -> subprocess.Popen[bytes]:
    """`mocra run` of the tree spider in `job` as `worker-<name>` (its User-Agent); items: `<name>.jsonl`."""
    settings = [
        f"crawl.concurrency={CONCURRENCY}",
        f"crawl.parse_workers={PARSE_WORKERS}",
        "crawl.obey_robots=false",
        f"download.user_agent=worker-{name}",
    ]
    options = [*job.run_args, "-s", "queue.visibility_timeout=3"]
    return start_crawl(tmp_path, site.base_url, name, options, settings)


def test_each_worker_reports_its_run_and_the_jobs_counts(
    tmp_path: pathlib.Path, site: LocalServer, broker_job: SharedJob
) -> None:
    workers = {name: start_worker(tmp_path, site, name, broker_job) for name in "ab"}
    outs = {name: worker.communicate(timeout=120)[0].decode() for name, worker in workers.items()}

    for name, worker in workers.items():
        assert worker.returncode == 0, outs[name]
    hits = sum(page_hits(site).values())
    written = len(items(tmp_path / "a.jsonl")) + len(items(tmp_path / "b.jsonl"))
    runs = {name: run_line(out) for name, out in outs.items()}
    jobs = {name: job_line(out) for name, out in outs.items()}
    assert hits == sum(pages for pages, _, _ in runs.values()) == PAGES  # no kill: each fetch counted once
    # the worker whose last save came last saw the other's too: its job line is the whole job, exactly
    seen = [job for job in jobs.values() if job is not None]
    last = max(seen, key=lambda job: (job.pages, job.elapsed), default=None)
    assert last is not None, outs
    assert (last.runs, last.pages, last.items, last.errors, last.dead) == (2, hits, written, 0, 0), outs
    assert last.elapsed == pytest.approx(sum(elapsed for _, _, elapsed in runs.values()), abs=0.2), outs
    for name, job in jobs.items():  # the other one's: its own run and what the other had saved by then
        if job is not None:
            assert runs[name][0] <= job.pages <= hits, outs[name]

    status = mocra("status", "--queue", broker_job.queue, "--job", broker_job.job, *broker_job.extra)

    assert f"job so far, 2 runs: {hits} pages, {written} items, 0 errors, 0 dead letters" in status, status


def test_after_a_worker_is_killed_the_job_line_misses_at_most_its_last_second(
    tmp_path: pathlib.Path, site: LocalServer, fetch_log: FetchLog, paced: Paced, broker_job: SharedJob
) -> None:
    # slower until a crawls: b alone had fetched 450 pages by then, and the job was over before the kill
    paced.delay = 2.5 * DELAY
    with reaping() as workers:
        first = start_worker(tmp_path, site, "a", broker_job)
        second = start_worker(tmp_path, site, "b", broker_job)
        workers += [first, second]
        wait_until(lambda: fetch_log.by("worker-a") > 0, [first], 60, "worker a made no progress")
        paced.delay = DELAY
        crawling = time.monotonic()
        # kill a mid-crawl, after it saved its counts at least once (a second after it began crawling)
        wait_until(lambda: time.monotonic() > crawling + SAVE_INTERVAL + SLACK, [first], 60, "?")
        assert len(fetch_log.fetches) < PAGES - 50, "the crawl is nearly over before the kill: make it longer"
        killed_at = time.monotonic()
        kill(first)
        paced.delay = 0.0  # the survivor crawls the rest at full speed

        out = second.communicate(timeout=120)[0].decode()

    assert second.returncode == 0, out
    hits = sum(page_hits(site).values())
    job = job_line(out)
    assert job is not None, out
    assert (job.runs, job.errors, job.dead) == (2, 0, 0), out
    own = run_line(out)[0]
    assert own == fetch_log.by("worker-b"), out  # the survivor's own run: every page it fetched
    # the job lacks a's counts since its last save: at most its last second of fetches (and what it held)
    unsaved = fetch_log.by("worker-a", since=killed_at - SAVE_INTERVAL - SLACK)
    print(f"{hits} fetches, job line {job.pages} pages; a fetched {unsaved} in its last second and a half")
    assert 0 <= hits - job.pages <= unsaved + HELD, (hits, unsaved, out)
    assert job.pages > own, out  # a's saved counts are in
    written = len(items(tmp_path / "a.jsonl")) + len(items(tmp_path / "b.jsonl"))
    assert 0 <= written - job.items <= unsaved + HELD, (written, unsaved, out)
