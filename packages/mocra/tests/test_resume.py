"""`mocra run --job-dir`: a crawl killed with SIGKILL (or stopped with Ctrl-C) resumes where it stopped."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import anyio
import msgspec
import pytest

from mocra_core.testing import LocalServer, ServerRequest, ServerResponse

from .tree_crawl import FailingLeaf, mocra

pytestmark = pytest.mark.slow

PAGES = 150
CONCURRENCY = 4
PARSE_WORKERS = 2
LINKS = 3  # per page

SPIDER = """
from mocra import Spider


class Tree(Spider[dict]):
    name = "tree"
    start_urls = ["BASE/p/0"]

    async def parse(self, response, ctx):
        ctx.emit({"n": int(response.url.rsplit("/", 1)[1])})
        for href in response.links():
            ctx.follow(href)
"""


async def tree_page(request: ServerRequest) -> ServerResponse:
    n = int(request.path.rsplit("/", 1)[1])
    if n >= PAGES:
        return ServerResponse(404, "no")
    await anyio.sleep(0.05)  # slow enough that the signal lands mid-crawl on a loaded machine
    links = "".join(f'<a href="/p/{k}">{k}</a>' for k in (2 * n + 1, 2 * n + 2, 0) if k < PAGES)
    return ServerResponse(body=f"<html><body>{links}</body></html>")


@pytest.fixture
def site() -> Iterator[LocalServer]:
    server = LocalServer(fallback=tree_page)
    with server.run_in_thread():
        yield server


def start(tmp_path: pathlib.Path, site: LocalServer, *extra: str) -> subprocess.Popen[bytes]:
    spider = tmp_path / "tree.py"
    spider.write_text(SPIDER.replace("BASE", site.base_url))
    args = [
        sys.executable, "-m", "mocra", "run", str(spider), "--job-dir", str(tmp_path / "job"),
        "-o", str(tmp_path / "items.jsonl"), "-s", f"crawl.concurrency={CONCURRENCY}",
        "-s", f"crawl.parse_workers={PARSE_WORKERS}",
        "-s", "crawl.obey_robots=false", *extra,
    ]  # fmt: skip
    return subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def items(tmp_path: pathlib.Path) -> list[int]:
    path = tmp_path / "items.jsonl"
    if not path.exists():
        return []
    return [msgspec.json.decode(line)["n"] for line in path.read_bytes().splitlines() if line.endswith(b"}")]


def wait_for_items(tmp_path: pathlib.Path, count: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while len(items(tmp_path)) < count:
        assert process.poll() is None, process.communicate()[0].decode()
        assert time.monotonic() < deadline, "the crawl made no progress"
        time.sleep(0.02)


def test_resume_after_kill_9_loses_nothing_and_refetches_only_in_flight(
    tmp_path: pathlib.Path, site: LocalServer
) -> None:
    first = start(tmp_path, site)
    wait_for_items(tmp_path, 40, first)
    os.kill(first.pid, signal.SIGKILL)
    first.communicate()
    parsed_before = set(items(tmp_path))
    assert len(parsed_before) < PAGES

    second = start(tmp_path, site)
    out, _ = second.communicate(timeout=120)

    assert second.returncode == 0, out.decode()
    assert set(items(tmp_path)) == set(range(PAGES))
    pages = {path: hits for path, hits in site.hits.items() if path.startswith("/p/")}
    assert max(pages.values()) <= 2
    fetched_again = {path for path, hits in pages.items() if hits > 1}
    # Fetched again: the downloads in flight at the kill, and the follow-ups of responses that were being
    # parsed (re-parsed on resume, their links are queued past dedup: it cannot tell whether they made it
    # to the queue before the kill). Everything else that was parsed is not fetched again.
    assert len(fetched_again) <= CONCURRENCY + PARSE_WORKERS * LINKS, fetched_again
    assert len({f"/p/{n}" for n in parsed_before} & fetched_again) <= PARSE_WORKERS * LINKS
    assert b"finished" in out


def test_resume_after_ctrl_c_fetches_nothing_twice(tmp_path: pathlib.Path, site: LocalServer) -> None:
    first = start(tmp_path, site)
    wait_for_items(tmp_path, 30, first)
    first.send_signal(signal.SIGINT)
    out, _ = first.communicate(timeout=60)
    assert first.returncode == 130, out.decode()
    assert b"interrupted" in out

    second = start(tmp_path, site)
    out, _ = second.communicate(timeout=120)

    assert second.returncode == 0, out.decode()
    assert sorted(items(tmp_path)) == list(range(PAGES))  # each item exactly once
    assert all(hits == 1 for path, hits in site.hits.items() if path.startswith("/p/"))


def test_dead_letters_of_a_job_are_listed_and_replayed(tmp_path: pathlib.Path) -> None:
    page = FailingLeaf()

    server = LocalServer(fallback=page)
    with server.run_in_thread():
        first = start(tmp_path, server, "-s", "retry.max_retries=0")
        out, _ = first.communicate(timeout=60)
        assert first.returncode == 0, out.decode()
        assert b"dead letter [request]" in out and b"/p/2" in out
        assert sorted(items(tmp_path)) == [0, 1]

        counts = mocra("status", "--job-dir", str(tmp_path / "job"))
        assert "request" in counts and "0 messages left" not in counts and "1 dead letters" in counts, counts
        listed = mocra("dlq", "list", "--job-dir", str(tmp_path / "job"))
        assert "request" in listed and "/p/2" in listed and "HTTP 500" in listed
        assert "1 dead letters" in listed

        replayed = mocra("dlq", "replay", "--job-dir", str(tmp_path / "job"))
        assert "1 dead letters replayed" in replayed
        page.broken = False
        second = start(tmp_path, server)
        out, _ = second.communicate(timeout=60)

    assert second.returncode == 0, out.decode()
    assert sorted(items(tmp_path)) == [0, 1, 2]
    assert "0 dead letters" in mocra("dlq", "list", "--job-dir", str(tmp_path / "job"))
    status = mocra("status", "--job-dir", str(tmp_path / "job"))
    assert "nothing left to crawl" in status
    assert "no job of that name" not in status, status  # the job is known: its modules and counts are there
