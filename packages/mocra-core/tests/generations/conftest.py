"""Every coordination backend a job's generations live on: memory, LMDB, Redis, a control plane, Raft."""

from __future__ import annotations

import os
import socket
import uuid
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

if TYPE_CHECKING:
    import pathlib
    from collections.abc import AsyncIterator

    from mocra_core.coordination import Coordination

REDIS_URL = os.environ.get("MOCRA_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _free_addr() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{probe.getsockname()[1]}"


@pytest.fixture(params=["local", "lmdb", "redis", "cluster-local", "cluster-raft"])
async def coordination(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> AsyncIterator[Coordination]:
    kind = request.param
    if kind == "cluster-local":
        async with LocalControlPlane(tmp_path / "plane", sync=False) as plane:
            async with ClusterCoordination(plane, namespace="job") as on_plane:
                yield on_plane
        return
    if kind == "cluster-raft":
        config = ClusterConfig.bootstrap("solo", _free_addr(), tmp_path / "raft", password="test")
        async with RaftControlPlane(config) as raft:
            with anyio.fail_after(10):
                await raft.wait_ready()
            async with ClusterCoordination(raft, namespace="job") as on_raft:
                yield on_raft
        return
    if kind == "redis":
        namespace = f"mocra-test-{uuid.uuid4().hex}"
        async with RedisCoordination(REDIS_URL, namespace=namespace) as redis:
            yield redis
            await redis.delete("generations")
            await redis.delete("modules")
        return
    store = LocalCoordination() if kind == "local" else LmdbCoordination(tmp_path / "coordination")
    async with store:
        yield store
