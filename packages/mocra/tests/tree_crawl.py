"""What the multi-process tests share: a tree spider run by `mocra run` in child processes, its items, and
the cleanup of a job's data on Redis and NATS."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence

import anyio
import msgspec

from mocra_core.testing import Handler, LocalServer, ServerRequest, ServerResponse

REDIS_URL = "redis://127.0.0.1:6379/15"
NATS_URL = "nats://127.0.0.1:4222"
POSTGRES_URL = os.environ.get(
    "MOCRA_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)

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


def tree_page(pages: int, delay: float) -> Handler:
    """A handler for `/p/n`: after `delay` s a page linking to 2n+1, 2n+2 and n//2; a 404 from `pages` on."""

    async def page(request: ServerRequest) -> ServerResponse:
        n = int(request.path.rsplit("/", 1)[1])
        if n >= pages:
            return ServerResponse(404, "no")
        await anyio.sleep(delay)
        links = "".join(f'<a href="/p/{k}">{k}</a>' for k in (2 * n + 1, 2 * n + 2, n // 2) if k < pages)
        return ServerResponse(body=f"<html><body>{links}</body></html>")

    return page


class FailingLeaf:
    """A handler: `/p/0` links to `/p/1` and `/p/2`, which are leaves; `/p/2` answers 500 while `broken`."""

    def __init__(self) -> None:
        self.broken = True

    async def __call__(self, request: ServerRequest) -> ServerResponse:
        if request.path == "/p/0":
            return ServerResponse(body='<a href="/p/1">1</a><a href="/p/2">2</a>')
        if self.broken and request.path == "/p/2":
            return ServerResponse(500, "down")
        return ServerResponse(body="<p>leaf</p>")


@contextlib.contextmanager
def serving(handler: Handler) -> Iterator[LocalServer]:
    """A `LocalServer` answering every path with `handler`, running in a thread."""
    server = LocalServer(fallback=handler)
    with server.run_in_thread():
        yield server


def page_hits(site: LocalServer) -> Counter[str]:
    """How often `site` served each `/p/…` page."""
    return Counter({p: h for p, h in site.hits.items() if p.startswith("/p/")})


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def free_addr() -> str:
    """`127.0.0.1:port` for a free port."""
    return f"127.0.0.1:{free_port()}"


def port_open(addr: str) -> bool:
    """Whether something accepts connections at `host:port`."""
    host, _, port = addr.rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=0.5).close()
    except OSError:
        return False
    return True


def start_crawl(
    tmp_path: pathlib.Path,
    base_url: str,
    name: str,
    args: Sequence[str],
    settings: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """Start `mocra run` on the tree spider of `base_url` with `args` and `-s` `settings`, in `tmp_path`.

    The items go to `tmp_path / f"{name}.jsonl"`; stdout and stderr are piped together.
    """
    spider = tmp_path / "tree.py"
    spider.write_text(SPIDER.replace("BASE", base_url))
    return subprocess.Popen(
        [sys.executable, "-m", "mocra", "run", str(spider), "-o", str(tmp_path / f"{name}.jsonl"),
         *args, *(f"-s{s}" for s in settings)],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip


def mocra(*args: str) -> str:
    """Run `mocra ARGS` in a subprocess; its stdout (it must succeed)."""
    result = subprocess.run(
        [sys.executable, "-m", "mocra", *args], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def wait_until(
    done: Callable[[], bool],
    processes: Sequence[subprocess.Popen[bytes]],
    timeout: float,
    message: str,
    interval: float = 0.02,
) -> None:
    """Poll `done` until it holds; fail with a process's output if one exits, or with `message` on timeout."""
    deadline = time.monotonic() + timeout
    while not done():
        for process in processes:
            assert process.poll() is None, process.communicate()[0].decode()
        assert time.monotonic() < deadline, message
        time.sleep(interval)


def kill(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL `process` and reap it."""
    os.kill(process.pid, signal.SIGKILL)
    process.communicate()


def items(path: pathlib.Path) -> list[int]:
    """The `id`s of the complete items in a JSON-lines file so far (none if it does not exist yet)."""
    if not path.exists():
        return []
    return [msgspec.json.decode(line)["id"] for line in path.read_bytes().splitlines() if line.endswith(b"}")]


@dataclasses.dataclass(frozen=True)
class SharedJob:
    """A job on a broker: its queue URL, its name, and the other `mocra run` options its workers need."""

    queue: str
    job: str
    extra: list[str]

    @property
    def run_args(self) -> list[str]:
        """The `mocra run` options that put a worker in this job."""
        return ["--job", self.job, "--queue", self.queue, *self.extra]


@contextlib.contextmanager
def fresh_job(queue: str, prefix: str = "t") -> Iterator[str]:
    """A new job id; afterwards its keys on Redis or its streams on NATS, as `queue` says, are deleted.

    A Kafka broker's topics are left: the tests' broker is their own and goes with them.
    """
    job = f"{prefix}{uuid.uuid4().hex[:12]}"
    try:
        yield job
    finally:
        if queue.startswith("redis://"):
            _delete_redis_keys(f"mocra-{job}")
        elif queue.startswith("nats://"):
            anyio.run(_delete_nats_streams, f"mocra-{job}")


@contextlib.contextmanager
def redis_or_nats_job(backend: str, tmp_path: pathlib.Path) -> Iterator[SharedJob]:
    """A fresh job on Redis (coordination on the same Redis) or NATS (coordination in LMDB in `tmp_path`)."""
    if backend == "redis":
        queue, extra = REDIS_URL, []
    else:
        queue, extra = NATS_URL, ["-s", f"coordination.url=lmdb://{tmp_path / 'coordination'}"]
    with fresh_job(queue) as job:
        yield SharedJob(queue, job, extra)


def _delete_redis_keys(prefix: str) -> None:
    import redis

    with redis.Redis(host="127.0.0.1", port=6379, db=15) as client:
        for key in client.scan_iter(match=f"{prefix}*", count=1000):
            client.delete(key)


async def _delete_nats_streams(prefix: str) -> None:
    import nats

    connection = await nats.connect(NATS_URL)
    try:
        jetstream = connection.jetstream()
        for info in await jetstream.streams_info():
            if info.config.name and info.config.name.startswith(prefix):
                await jetstream.delete_stream(info.config.name)
    finally:
        await connection.close()
