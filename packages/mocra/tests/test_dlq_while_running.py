"""`mocra dlq list` and `mocra status` read a job dir while its job runs; `dlq replay` waits for it to end."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import threading

import anyio
import pytest

from mocra_core.testing import ServerRequest, ServerResponse

from .tree_crawl import mocra, serving, start_crawl, wait_until

pytestmark = pytest.mark.slow


class HangingLeaf:
    """`/p/0` links to `/p/1` and `/p/2`; `/p/2` answers 500; `/p/1` answers once `release` is set.

    (Nothing else exists: `/robots.txt` is a 404.)
    """

    def __init__(self) -> None:
        self.release = threading.Event()

    async def __call__(self, request: ServerRequest) -> ServerResponse:
        if request.path == "/p/0":
            return ServerResponse(body='<a href="/p/1">1</a><a href="/p/2">2</a>')
        if request.path == "/p/2":
            return ServerResponse(500, "down")
        if request.path != "/p/1":
            return ServerResponse(404, "no")
        await anyio.to_thread.run_sync(self.release.wait, 60)
        return ServerResponse(body="<p>leaf</p>")


def test_dead_letters_are_listed_while_the_job_runs(tmp_path: pathlib.Path) -> None:
    job = str(tmp_path / "job")
    page = HangingLeaf()
    with serving(page) as site:
        settings = ["retry.max_retries=0", "crawl.obey_robots=false"]  # /p/1 answers before a timeout
        run = start_crawl(tmp_path, site.base_url, "tree", ["--job-dir", job], settings)
        try:
            wait_until(lambda: site.hits.get("/p/2", 0) > 0, [run], 30, "/p/2 was not fetched")

            def listed() -> bool:
                return "1 dead letters" in mocra("dlq", "list", "--job-dir", job)

            wait_until(listed, [run], 30, "the dead letter was not listed", interval=0.2)
            lines = mocra("dlq", "list", "--job-dir", job)
            status = mocra("status", "--job-dir", job)
            replay = subprocess.run(
                [sys.executable, "-m", "mocra", "dlq", "replay", "--job-dir", job],
                capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            assert run.poll() is None, "the job ended: the listing was not made while it ran"
        finally:
            page.release.set()
        out = run.communicate(timeout=60)[0].decode()

    assert run.returncode == 0, out
    assert "request" in lines and "/p/2" in lines and "HTTP 500" in lines, lines
    assert "1 dead letters" in status and "nothing left to crawl" not in status, status
    assert replay.returncode == 2
    assert f"the job is running (process {run.pid})" in replay.stderr, replay.stderr
    assert "1 dead letters" in mocra("dlq", "list", "--job-dir", job)  # the refused replay moved nothing
