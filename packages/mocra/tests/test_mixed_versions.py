"""Mixed versions in one job: two worker processes at different minor versions of the request record
share one crawl on Redis and on NATS, and every item comes once.

The newer worker is simulated: with `NEWER_MINOR_MARK` set (not a `MOCRA_` name: those are settings),
the spider file installs a codec that writes each queued request as a later minor version would, one
field more in the request record, in its routing and in the pair that holds them. The older worker runs
the released codec and must read them.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator

import pytest

from mocra_core.testing import LocalServer

from .tree_crawl import SharedJob, items, mocra, redis_or_nats_job, serving, tree_page

pytestmark = pytest.mark.slow

PAGES = 200
FLAG = "NEWER_MINOR_MARK"  # the path of a file the newer codec creates when it first writes a request

SPIDER = """
import os

import msgspec

from mocra import Spider


class Tree(Spider[dict]):
    name = "tree"
    start_urls = ["BASE/p/0"]

    async def parse(self, response, ctx):
        ctx.emit({"id": int(response.url.rsplit("/", 1)[1])})
        for href in response.links():
            ctx.follow(href)


if os.environ.get("FLAG"):
    from mocra_core.engine import _codec
    from mocra_core.http import Routed

    class NewerMinorCodec(_codec.EngineCodec):
        # a later minor: a field appended to the request record, to its routing and to the pair
        def encode(self, payload):
            if not isinstance(payload, Routed):
                return super().encode(payload)
            record = [*msgspec.structs.astuple(payload.request.to_record()), {"newer": 1}]
            routing = [*msgspec.structs.astuple(payload.routing), "newer"]
            open(os.environ["FLAG"], "a").close()
            return b"Q" + msgspec.msgpack.encode([record, routing, ["newer"]])

    _codec.EngineCodec = NewerMinorCodec
""".replace("FLAG", FLAG)


@pytest.fixture(params=["redis", "nats"])
def job(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[SharedJob]:
    with redis_or_nats_job(request.param, tmp_path) as shared:
        yield shared


def start_worker(
    tmp_path: pathlib.Path, site: LocalServer, job: SharedJob, name: str, newer: bool
) -> subprocess.Popen[bytes]:
    """`mocra run` of the tree spider in `job`, items to `name.jsonl`; `newer`: at the next minor version."""
    spider = tmp_path / "tree.py"
    spider.write_text(SPIDER.replace("BASE", site.base_url))
    env = {k: v for k, v in os.environ.items() if k != FLAG}
    if newer:
        env[FLAG] = str(tmp_path / "newer-wrote")
    return subprocess.Popen(
        [sys.executable, "-m", "mocra", "run", str(spider), "-o", str(tmp_path / f"{name}.jsonl"),
         *job.run_args, "-scrawl.obey_robots=false", "-scrawl.concurrency=4"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip


def test_workers_at_two_minor_versions_complete_one_crawl_with_every_item_once(
    tmp_path: pathlib.Path, job: SharedJob
) -> None:
    with serving(tree_page(PAGES, 0.05)) as site:
        newer = start_worker(tmp_path, site, job, "newer", newer=True)  # seeds: the older reads its requests
        older = start_worker(tmp_path, site, job, "older", newer=False)
        outputs = [process.communicate(timeout=120)[0].decode() for process in (older, newer)]

    assert [older.returncode, newer.returncode] == [0, 0], outputs
    assert (tmp_path / "newer-wrote").exists(), "the newer worker wrote no request of the newer minor"
    a, b = items(tmp_path / "older.jsonl"), items(tmp_path / "newer.jsonl")
    assert a and b, "one worker did all the work"
    assert Counter(a) + Counter(b) == Counter(range(PAGES))  # every item, once
    assert site.hits["/p/0"] == 1
    where = ["--queue", job.queue, "--job", job.job, *job.extra]
    assert "0 dead letters" in mocra("dlq", "list", *where)
