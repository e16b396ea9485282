"""A killed worker's leases come back in seconds (its liveness lapses), not after the visibility timeout.

Two `mocra run` workers of one job on Redis and on NATS, with the default settings (visibility timeout
300 s); one is killed with SIGKILL mid-crawl and the other must finish the crawl soon after, with every
page's item.
"""

from __future__ import annotations

import pathlib
import subprocess
import time
from collections.abc import Iterator

import pytest

from mocra_core.testing import LocalServer

from .tree_crawl import (
    SharedJob,
    items,
    kill,
    redis_or_nats_job,
    serving,
    start_crawl,
    tree_page,
    wait_until,
)

pytestmark = pytest.mark.slow

PAGES = 200
SLOW = 0.2  # seconds each page takes: a worker always holds leases of pages in flight
FINISH_WITHIN = 30.0  # seconds after the kill; with the default liveness timeout it takes ~10-20 s
SETTINGS = ["crawl.concurrency=8", "crawl.parse_workers=4", "crawl.obey_robots=false"]


@pytest.fixture
def site() -> Iterator[LocalServer]:
    with serving(tree_page(PAGES, SLOW)) as server:
        yield server


@pytest.fixture(params=["redis", "nats"])
def job(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[SharedJob]:
    """A fresh job on Redis, or on NATS with an LMDB coordination store."""
    with redis_or_nats_job(request.param, tmp_path) as job:
        yield job


def test_the_survivor_of_a_sigkill_finishes_within_seconds_with_default_settings(
    tmp_path: pathlib.Path, site: LocalServer, job: SharedJob
) -> None:
    first = start_crawl(tmp_path, site.base_url, "a", job.run_args, SETTINGS)
    second = start_crawl(tmp_path, site.base_url, "b", job.run_args, SETTINGS)
    try:
        wait_until(
            lambda: len(items(tmp_path / "a.jsonl")) >= 20, [first, second], 60, "worker a made no progress"
        )
        kill(first)
        killed_at = time.monotonic()
        try:
            out, _ = second.communicate(timeout=FINISH_WITHIN)
        except subprocess.TimeoutExpired:
            left = PAGES - len(set(items(tmp_path / "a.jsonl")) | set(items(tmp_path / "b.jsonl")))
            pytest.fail(
                f"the survivor did not finish within {FINISH_WITHIN:g} s of the kill ({left} pages left)"
            )
        took = time.monotonic() - killed_at
    finally:
        for worker in (first, second):
            if worker.poll() is None:
                kill(worker)

    assert second.returncode == 0, out.decode()
    a, b = items(tmp_path / "a.jsonl"), items(tmp_path / "b.jsonl")
    assert set(a) | set(b) == set(range(PAGES))  # nothing lost
    print(f"the survivor finished {took:.1f} s after the kill")
