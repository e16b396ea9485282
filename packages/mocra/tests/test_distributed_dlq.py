"""`mocra dlq list|replay` and `mocra status` with `--queue URL --job NAME`: the dead letters of a job on a
broker are counted, listed, replayed, and processed by the job's next worker."""

from __future__ import annotations

import pathlib

import pytest

from .tree_crawl import FailingLeaf, SharedJob, items, mocra, serving, start_crawl

pytestmark = pytest.mark.slow

SETTINGS = ["retry.max_retries=0", "crawl.obey_robots=false", "queue.kafka.session_timeout=2"]


def test_dead_letters_of_a_shared_job_are_listed_and_replayed(
    tmp_path: pathlib.Path, shared_job: SharedJob
) -> None:
    page = FailingLeaf()

    where = ["--queue", shared_job.queue, "--job", shared_job.job, *(f"-s{s}" for s in SETTINGS)]
    with serving(page) as site:
        first = start_crawl(tmp_path, site.base_url, "a", shared_job.run_args, SETTINGS)
        out, _ = first.communicate(timeout=120)
        assert first.returncode == 0, out.decode()
        assert sorted(items(tmp_path / "a.jsonl")) == [0, 1]

        assert status(*where) == {"task": (0, 0), "request": (0, 1), "response": (0, 0)}
        listed = mocra("dlq", "list", *where)
        assert "request" in listed and "/p/2" in listed and "HTTP 500" in listed, listed
        assert "1 dead letters" in listed

        replayed = mocra("dlq", "replay", *where)
        assert "1 dead letters replayed" in replayed
        assert shared_job.job in replayed
        assert status(*where)["request"] == (1, 0)  # back in the queue, for the next worker
        page.broken = False
        second = start_crawl(tmp_path, site.base_url, "b", shared_job.run_args, SETTINGS)
        out, _ = second.communicate(timeout=120)

        assert second.returncode == 0, out.decode()
        assert items(tmp_path / "b.jsonl") == [2]  # the replayed request, and nothing seeded again
        assert site.hits["/p/0"] == 1
    assert "0 dead letters" in mocra("dlq", "list", *where)
    assert "nothing left to crawl" in mocra("status", *where)


def status(*where: str) -> dict[str, tuple[int, int]]:
    """`mocra status`: per queue, (pending, dead letters)."""
    lines = mocra("status", *where).splitlines()
    assert lines[0].startswith("job ") and lines[1].split() == ["queue", "pending", "dead", "letters"]
    return {name: (int(pending), int(dead)) for name, pending, dead in (line.split() for line in lines[2:5])}
