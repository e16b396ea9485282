"""A worker rides out its broker going away mid-crawl (killed with SIGKILL, back seconds later) and loses
nothing; a broker that stays away stops it in order after `crawl.outage_timeout`, with exit code 75."""

from __future__ import annotations

import pathlib
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator

import pytest

from mocra_core.testing import LocalServer

from .paced import Paced
from .tree_crawl import (
    NATS_URL,
    free_port,
    fresh_job,
    items,
    kill,
    mocra,
    port_open,
    serving,
    start_crawl,
    tree_page,
    wait_until,
)

pytestmark = pytest.mark.slow

PAGES = 300
NATS_SERVER = shutil.which("nats-server") or "/usr/sbin/nats-server"
REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


@pytest.fixture
def paced() -> Paced:
    return Paced(tree_page(PAGES, 0.0), delay=0.05)


@pytest.fixture
def site(paced: Paced) -> Iterator[LocalServer]:
    with serving(paced) as server:
        yield server


def nats(port: int, store: pathlib.Path) -> list[str]:
    """A nats-server of the test's own with JetStream on disk (it keeps its streams over a restart)."""
    return [NATS_SERVER, "-js", "-a", "127.0.0.1", "-p", str(port), "-sd", str(store)]


def redis(port: int, store: pathlib.Path) -> list[str]:
    """A redis-server of the test's own that writes every change to its append-only file."""
    return [REDIS_SERVER, "--bind", "127.0.0.1", "--port", str(port), "--dir", str(store), "--save", "",
            "--appendonly", "yes", "--appendfsync", "always"]  # fmt: skip


BROKERS: dict[str, tuple[Callable[[int, pathlib.Path], list[str]], Callable[[int], list[str]]]] = {
    # a NATS request waits 2 s (not 5), as above
    "nats": (nats, lambda port: ["--queue", f"nats://127.0.0.1:{port}", "-s", "queue.nats.timeout=2"]),
    # a Redis call retries for 2 s (not 30): the 5 s outage outlasts the backend's own patience
    "redis": (
        redis,
        lambda port: ["--queue", f"redis://127.0.0.1:{port}/0", "-s", "queue.redis.reconnect_timeout=2"],
    ),
}


class Broker:
    """A broker process that the test kills and starts again on the same port and store."""

    def __init__(self, kind: str, store: pathlib.Path) -> None:
        self.command, self.options = BROKERS[kind]
        self.port = free_port()
        self.store = store
        store.mkdir()
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            self.command(self.port, self.store), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 20
        while not port_open(f"127.0.0.1:{self.port}"):
            assert self.process.poll() is None and time.monotonic() < deadline, "the broker did not start"
            time.sleep(0.05)

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait(10)


@pytest.fixture(params=sorted(BROKERS))
def broker(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[Broker]:
    if not pathlib.Path(NATS_SERVER if request.param == "nats" else REDIS_SERVER).exists():
        pytest.skip(f"needs {request.param}'s server binary")
    own = Broker(request.param, tmp_path / "broker")
    own.start()
    yield own
    if own.process is not None and own.process.poll() is None:
        own.kill()


def start_worker(
    tmp_path: pathlib.Path, site: LocalServer, broker: Broker, *settings: str
) -> subprocess.Popen[bytes]:
    options = [*broker.options(broker.port), "--job", "outage"]
    if "nats" in options[1]:  # NATS keeps no shared state: the job's coordination on the host's LMDB
        options += ["-s", f"coordination.url=lmdb://{tmp_path / 'coordination'}"]
    crawl = ["crawl.concurrency=2", "crawl.obey_robots=false", "queue.visibility_timeout=3", *settings]
    return start_crawl(tmp_path, site.base_url, "a", options, crawl)


def test_a_worker_rides_out_its_broker_going_away(
    tmp_path: pathlib.Path, site: LocalServer, paced: Paced, broker: Broker
) -> None:
    worker = start_worker(tmp_path, site, broker)
    wait_until(lambda: len(items(tmp_path / "a.jsonl")) >= 40, [worker], 60, "the worker made no progress")
    broker.kill()
    time.sleep(5)  # longer than a broker call waits (2 s): the worker's own retries give up meanwhile
    assert worker.poll() is None, worker.communicate()[0].decode()
    broker.start()
    paced.delay = 0.0  # the rest of the crawl at full speed

    out = worker.communicate(timeout=120)[0].decode()

    assert worker.returncode == 0, out
    assert set(items(tmp_path / "a.jsonl")) == set(range(PAGES)), out  # nothing lost
    assert "Traceback" not in out
    assert "reachable again" in out


def test_a_broker_that_stays_away_stops_the_worker_in_order(
    tmp_path: pathlib.Path, site: LocalServer, broker: Broker
) -> None:
    worker = start_worker(tmp_path, site, broker, "crawl.outage_timeout=4")
    wait_until(lambda: len(items(tmp_path / "a.jsonl")) >= 40, [worker], 60, "the worker made no progress")
    broker.kill()

    try:
        out = worker.communicate(timeout=60)[0].decode()
    except subprocess.TimeoutExpired:
        kill(worker)
        raise

    assert worker.returncode == 75, out  # EX_TEMPFAIL: run it again once the broker is back
    assert "unavailable:" in out and "crawl.outage_timeout" in out
    assert "Traceback" not in out


def test_a_coordination_store_that_stays_away_stops_the_worker_in_order(
    tmp_path: pathlib.Path, site: LocalServer
) -> None:
    # the job's queues on the machine's NATS; its seen set, gates and flags on a Redis of the test's own
    store = Broker("redis", tmp_path / "store")
    store.start()
    with fresh_job(NATS_URL) as job:
        options = [
            "--queue",
            NATS_URL,
            "--job",
            job,
            "-s",
            f"coordination.url=redis://127.0.0.1:{store.port}/0",
        ]
        crawl = ["crawl.concurrency=2", "crawl.obey_robots=false", "crawl.outage_timeout=4"]
        worker = start_crawl(tmp_path, site.base_url, "a", options, crawl)
        wait_until(
            lambda: len(items(tmp_path / "a.jsonl")) >= 40, [worker], 60, "the worker made no progress"
        )
        store.kill()

        out = worker.communicate(timeout=60)[0].decode()
        status = mocra("status", "--queue", NATS_URL, "--job", job)

    assert worker.returncode == 75, out
    assert "unavailable:" in out and "Traceback" not in out
    assert re.search(r"^request +[1-9]\d* +0$", status, re.MULTILINE), status  # handed back, none buried


def test_a_job_whose_redis_restarts_empty_stops_as_lost(tmp_path: pathlib.Path, site: LocalServer) -> None:
    # a Redis that keeps nothing on disk: back after a crash without the job's queues, seen set or flags
    broker = Broker("redis", tmp_path / "broker")
    broker.command = lambda port, _: [REDIS_SERVER, "--bind", "127.0.0.1", "--port", str(port), "--save", ""]
    broker.start()
    try:
        worker = start_worker(tmp_path, site, broker)
        wait_until(
            lambda: len(items(tmp_path / "a.jsonl")) >= 40, [worker], 60, "the worker made no progress"
        )
        broker.kill()
        broker.start()
        try:
            out = worker.communicate(timeout=60)[0].decode()  # it waited forever for a seeding to come
        except subprocess.TimeoutExpired:
            kill(worker)
            raise
    finally:
        broker.kill()

    assert worker.returncode == 1, out
    assert "lost:" in out and "running the job again starts it over" in out
    assert "Traceback" not in out
    assert len(items(tmp_path / "a.jsonl")) >= 40  # what was written stays
