"""Fixtures of the coordination tests: a clock the tests move, and every backend behind one fixture."""

from __future__ import annotations

import os
import socket
import uuid
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import anyio
import pytest

from mocra_cluster import ClusterConfig, LocalControlPlane, RaftControlPlane
from mocra_core.coordination import (
    ClusterCoordination,
    LmdbCoordination,
    LocalCoordination,
    RedisCoordination,
)
from mocra_dag import ManualClock

if TYPE_CHECKING:
    import pathlib
    from collections.abc import AsyncIterator, Callable, Iterator

    from mocra_cluster import ControlPlane
    from mocra_core.coordination import Coordination

BACKENDS = ["local", "lmdb", "redis", "cluster-local", "cluster-raft"]
REDIS_URL = os.environ.get("MOCRA_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
_redis_namespaces: list[str] = []  # made by open_backend during a test; dropped after it


class FakeClock(ManualClock):
    """A clock that moves only when told to: callable for the coordination, a `mocra_dag.Clock` too."""

    def __call__(self) -> float:
        return self.now()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(1_700_000_000.0)


def open_backend(kind: str, path: pathlib.Path, clock: FakeClock) -> Coordination:
    if kind == "local":
        return LocalCoordination(clock=clock)
    if kind == "redis":
        _redis_namespaces.append(f"mocra-test-{uuid.uuid4().hex}")
        return RedisCoordination(REDIS_URL, namespace=_redis_namespaces[-1], clock=clock)
    return LmdbCoordination(path / "coordination", clock=clock)


@pytest.fixture(autouse=True)
def _drop_redis_namespaces() -> Iterator[None]:
    """Delete the keys of the Redis namespaces the test made (a sync client: after the test's loop)."""
    yield
    if _redis_namespaces:
        import redis

        with redis.Redis.from_url(REDIS_URL) as client:
            for namespace in _redis_namespaces:
                if keys := list(client.scan_iter(match=f"{namespace}:*", count=1000)):
                    client.delete(*keys)
        _redis_namespaces.clear()


@pytest.fixture
def open_coordination(tmp_path: pathlib.Path, clock: FakeClock) -> Callable[[str], Coordination]:
    """`open_coordination(kind)`: a new store of that kind on the test's directory and clock."""
    return lambda kind: open_backend(kind, tmp_path, clock)


@asynccontextmanager
async def open_plane(kind: str, path: pathlib.Path, clock: FakeClock) -> AsyncIterator[ControlPlane]:
    """A `mocra_cluster` control plane: LMDB (`cluster-local`) or a single-node Raft (`cluster-raft`)."""
    if kind == "cluster-local":
        async with LocalControlPlane(path / "plane", clock=clock, sync=False) as local:
            yield local
        return
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        addr = f"127.0.0.1:{probe.getsockname()[1]}"
    config = ClusterConfig.bootstrap("solo", addr, path / "raft", password="test")
    async with RaftControlPlane(config, clock=clock) as raft:
        with anyio.fail_after(10):
            await raft.wait_ready()
        yield raft


@pytest.fixture(params=BACKENDS)
async def coordination(
    request: pytest.FixtureRequest, tmp_path: pathlib.Path, clock: FakeClock
) -> AsyncIterator[Coordination]:
    if request.param.startswith("cluster-"):
        async with open_plane(request.param, tmp_path, clock) as plane:
            async with ClusterCoordination(plane, namespace="job") as on_plane:
                yield on_plane
        return
    async with open_backend(request.param, tmp_path, clock) as found:
        yield found
