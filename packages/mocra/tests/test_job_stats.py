"""The summary of a `--job-dir` job killed with SIGKILL again and again: what this run did, what the job did.

A kill loses the counts of the work then in flight, which the next run does again and counts: at most
`crawl.concurrency` downloads, `crawl.parse_workers` parses and as many finished pages waiting for their
ack. Everything else the job did is in its counts, however often it was killed.
"""

from __future__ import annotations

import pathlib
import re
import time

import pytest

from .tree_crawl import items, kill, page_hits, serving, start_crawl, tree_page, wait_until

pytestmark = pytest.mark.slow

PAGES = 300
CONCURRENCY = 4
PARSE_WORKERS = 2
KILLS = 5
LOST_PER_KILL = CONCURRENCY + 2 * PARSE_WORKERS  # the pages in flight at a kill, at most

RUN = re.compile(r"^finished: (\d+) pages, (\d+) items in ([\d.]+)s", re.M)
JOB = re.compile(
    r"^  job so far, (\d+) runs: (\d+) pages, (\d+) items, (\d+) errors, \d+ dead letters in ([\d.]+)s", re.M
)


def test_job_counts_after_kill_9_are_right_within_the_work_in_flight(tmp_path: pathlib.Path) -> None:
    output = tmp_path / "tree.jsonl"
    args = ["--job-dir", str(tmp_path / "job")]
    settings = [f"crawl.concurrency={CONCURRENCY}", f"crawl.parse_workers={PARSE_WORKERS}",
                "crawl.obey_robots=false"]  # fmt: skip
    with serving(tree_page(PAGES, delay=0.03)) as site:
        walls = []
        for _ in range(KILLS):
            before = len(items(output))
            started = time.monotonic()
            process = start_crawl(tmp_path, site.base_url, "tree", args, settings)
            grown = lambda before=before: len(items(output)) >= before + 30  # noqa: E731
            wait_until(grown, [process], 60, "the crawl made no progress")
            kill(process)
            walls.append(time.monotonic() - started)
        assert len(set(items(output))) < PAGES, "the crawl ended before the last kill: make it longer"
        started = time.monotonic()
        last = start_crawl(tmp_path, site.base_url, "tree", args, settings)
        out = last.communicate(timeout=120)[0].decode()
        last_wall = time.monotonic() - started
        hits = sum(page_hits(site).values())

    assert last.returncode == 0, out
    assert set(items(output)) == set(range(PAGES))
    run = RUN.search(out)
    job = JOB.search(out)
    assert run is not None and job is not None, out
    runs, job_pages, job_items, job_errors, job_time = (float(g) for g in job.groups())
    assert runs == KILLS + 1
    # each kill may lose the counts of the pages in flight, which the next run fetched and counted again
    assert 0 <= hits - job_pages <= KILLS * LOST_PER_KILL, (hits, out)
    assert 0 <= len(items(output)) - job_items <= KILLS * LOST_PER_KILL, (len(items(output)), out)
    assert job_errors == 0
    # the last run's time is its own; the job's is the crawling time of all its runs
    run_pages, run_time = float(run.group(1)), float(run.group(3))
    assert run_time <= last_wall
    assert run_pages < job_pages
    assert run_time < job_time <= sum(walls) + last_wall
