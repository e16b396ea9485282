"""Fixtures for the queue tests: one factory parametrised over every backend, and a fake clock."""

from __future__ import annotations

import os
import uuid
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from mocra_core.queue import LmdbQueue, MemoryQueue, MsgpackCodec, NatsJetStreamQueue, RedisStreamsQueue

if TYPE_CHECKING:
    import pathlib
    from collections.abc import Iterator

    from mocra_core.queue import QueueBackend

# A backend is done when `test_conformance.py` passes on it unchanged: add its name here and a branch below
# that opens a fresh namespace (a new stream prefix / subject / topic set) per test.
BACKENDS = ["memory", "lmdb", "redis", "nats"]
REDIS_URL = os.environ.get("MOCRA_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
NATS_URL = os.environ.get("MOCRA_TEST_NATS_URL", "nats://127.0.0.1:4222")


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


@pytest.fixture
def open_backend(backend: str, tmp_path: pathlib.Path, request: pytest.FixtureRequest) -> OpenBackend:
    """Open the backend under test; `options` are constructor options every backend accepts
    (`visibility_timeout`, `max_attempts`; the in-process ones also take `clock` and `wall_clock`)."""

    redis_namespace = request.getfixturevalue("redis_namespace") if backend == "redis" else ""
    nats_namespace = request.getfixturevalue("nats_namespace") if backend == "nats" else ""

    def open_(**options: Any) -> QueueBackend:
        if backend == "memory":
            return MemoryQueue(**options)
        if backend == "redis":
            return RedisStreamsQueue(REDIS_URL, codec=MsgpackCodec(), namespace=redis_namespace, **options)
        if backend == "nats":
            return NatsJetStreamQueue(NATS_URL, codec=MsgpackCodec(), namespace=nats_namespace, **options)
        return LmdbQueue(tmp_path / "queue", codec=MsgpackCodec(), **options)

    return open_


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()
