"""`crawl.max_pages` on a shared queue is the job's budget: two workers together start at most that many
downloads, and the job's next run goes on from what is left."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator

import pytest

from mocra_core.testing import LocalServer

from .tree_crawl import SharedJob, items, serving, start_crawl, tree_page

pytestmark = pytest.mark.slow

PAGES = 400
BUDGET = 150


@pytest.fixture
def site() -> Iterator[LocalServer]:
    with serving(tree_page(PAGES, 0.005)) as server:
        yield server


def run_workers(
    tmp_path: pathlib.Path, site: LocalServer, job: SharedJob, budget: int, names: str
) -> list[str]:
    """Run one worker per letter of `names` side by side on the job with `budget`; their outputs."""
    settings = ["crawl.concurrency=8", "crawl.obey_robots=false", f"crawl.max_pages={budget}"]
    workers = [start_crawl(tmp_path, site.base_url, name, job.run_args, settings) for name in names]
    outputs = []
    for worker in workers:
        out = worker.communicate(timeout=120)[0].decode()
        assert worker.returncode == 0, out
        assert any(line.startswith("max_pages:") for line in out.splitlines()), out
        outputs.append(out)
    return outputs


def test_workers_share_the_page_budget_of_their_job(
    tmp_path: pathlib.Path, site: LocalServer, shared_job: SharedJob
) -> None:
    run_workers(tmp_path, site, shared_job, BUDGET, "ab")

    assert sum(site.hits.values()) == BUDGET  # job-wide: not BUDGET per worker
    first = set(items(tmp_path / "a.jsonl")) | set(items(tmp_path / "b.jsonl"))
    assert len(first) == BUDGET

    run_workers(tmp_path, site, shared_job, BUDGET + 50, "c")  # a larger budget: 50 pages more

    assert sum(site.hits.values()) == BUDGET + 50
    assert not first & set(items(tmp_path / "c.jsonl"))  # it went on where the job stopped

    [out] = run_workers(tmp_path, site, shared_job, BUDGET + 50, "d")  # nothing left: says why it stops

    assert sum(site.hits.values()) == BUDGET + 50
    assert "page budget was spent by its earlier runs" in out
