"""RaftControlPlane in one process: the ControlPlane calls on a single-node cluster, restarts, security."""

from __future__ import annotations

import contextlib
import pathlib
import pickle
import socket
import struct
import zlib
from collections.abc import AsyncIterator

import anyio
import pytest

from mocra_cluster import (
    ClusterClosed,
    ClusterConfig,
    ClusterUnavailable,
    ControlPlane,
    Message,
    NoQuorum,
    RaftControlPlane,
    RaftTuning,
    partition_of,
)
from mocra_cluster._raft_admin import add_voter
from mocra_cluster._raft_auth import MessageAuthenticator

pytestmark = pytest.mark.anyio

PASSWORD = "test-cluster-password"


class FakeClock:
    def __init__(self, now: float = 1_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def free_addr() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


def solo(tmp_path: pathlib.Path, addr: str | None = None, **tuning: float) -> ClusterConfig:
    return ClusterConfig.bootstrap(
        "solo", addr or free_addr(), tmp_path / "solo", password=PASSWORD, tuning=RaftTuning(**tuning)
    )


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def plane(tmp_path: pathlib.Path, clock: FakeClock) -> AsyncIterator[RaftControlPlane]:
    async with RaftControlPlane(solo(tmp_path), clock=clock, poll_interval=0.01) as found:
        with anyio.fail_after(10):
            await found.wait_ready()
        yield found


async def test_it_is_a_control_plane(plane: RaftControlPlane) -> None:
    def accepts(found: ControlPlane) -> ControlPlane:
        return found

    assert accepts(plane) is plane


async def test_kv_with_ttl_and_cas(plane: RaftControlPlane, clock: FakeClock) -> None:
    await plane.set("a", b"1", ttl=5)
    assert await plane.get("a") == b"1"
    clock.now += 5
    assert await plane.get("a", linearizable=True) is None
    assert await plane.compare_and_set("a", None, b"2") is True
    assert await plane.compare_and_set("a", b"1", b"3") is False
    assert await plane.delete("a") is True
    with pytest.raises(ValueError, match="key must be"):
        await plane.set("", b"x")


async def test_locks_are_fenced_and_holder_checked(plane: RaftControlPlane, clock: FakeClock) -> None:
    first = await plane.acquire_lock("job", "a", ttl=10)
    assert await plane.acquire_lock("job", "b", ttl=10) is None
    assert await plane.renew_lock("job", "b", first or 0, ttl=10) is False
    clock.now += 11
    second = await plane.acquire_lock("job", "b", ttl=10)
    assert (first, second, await plane.fence()) == (1, 2, 2)
    holder = await plane.lock_holder("job")
    assert holder is not None and (holder.holder, holder.token) == ("b", 2)
    assert await plane.release_lock("job", "a", 1) is False
    assert await plane.release_lock("job", "b", 2) is True


async def test_membership_partitions_and_status(plane: RaftControlPlane) -> None:
    assert [m.member_id for m in await plane.members()] == ["solo"]
    assert await plane.is_leader() is True
    assert len(await plane.owned_partitions()) == 256 and await plane.owns_key("any")
    assert await plane.join("worker", "10.0.0.9:1", voter=False) is True
    assert [m.member_id for m in await plane.voters()] == ["solo"]
    token = await plane.acquire_partition(partition_of("k"), ttl=30)
    assert token is not None and await plane.renew_partition(partition_of("k"), token, ttl=30)
    status = await plane.status()
    assert (status.node_id, status.leader, status.members) == ("solo", "solo", 2)
    assert status.term >= 1 and status.applied_index == 4
    assert plane.raft_voters() == [plane.config.addr]
    assert await plane.remove("worker") is True


async def test_subscribe_yields_published_messages_in_order(plane: RaftControlPlane) -> None:
    await plane.publish("events", b"before")
    received: list[Message] = []

    async def consume() -> None:
        async for message in plane.subscribe("events"):
            received.append(message)
            if len(received) == 2:
                return

    async with anyio.create_task_group() as group:
        group.start_soon(consume)
        await anyio.sleep(0.05)
        assert await plane.publish("events", b"one") == 2
        assert await plane.publish("events", b"two") == 3
    assert [(m.seq, m.payload) for m in received] == [(2, b"one"), (3, b"two")]


async def test_restart_restores_snapshot_and_journal(tmp_path: pathlib.Path) -> None:
    config = solo(tmp_path, compaction_min_entries=10)
    async with RaftControlPlane(config) as plane:
        with anyio.fail_after(10):
            await plane.wait_ready()
        for i in range(30):
            await plane.set(f"k{i}", str(i).encode())
        assert await plane.acquire_lock("job", "w", ttl=600) == 1
        plane.compact()
        with anyio.fail_after(5):
            while not (tmp_path / "solo" / "raft.snapshot").exists():  # noqa: ASYNC110
                await anyio.sleep(0.01)
        assert await plane.acquire_lock("other", "w", ttl=600) == 2  # journal only
    async with RaftControlPlane(config) as again:
        with anyio.fail_after(10):
            await again.wait_ready()
        assert await again.get("k0") == b"0" and await again.get("k29") == b"29"
        assert await again.fence() == 2
        assert await again.acquire_lock("third", "w", ttl=600) == 3


async def test_closed_plane_refuses_calls(tmp_path: pathlib.Path) -> None:
    async with RaftControlPlane(solo(tmp_path)) as plane:
        pass
    with pytest.raises(ClusterClosed):
        await plane.get("a")


async def test_a_voter_without_its_peers_fails_fast_with_no_quorum(tmp_path: pathlib.Path) -> None:
    addr, absent = free_addr(), free_addr()
    config = ClusterConfig.bootstrap("a", addr, tmp_path / "a", password=PASSWORD, peers=[absent])
    async with RaftControlPlane(config) as plane:
        with anyio.fail_after(RaftTuning().quorum_grace + 2), pytest.raises(NoQuorum, match="no majority"):
            await plane.set("k", b"v")


async def test_a_node_with_another_password_cannot_join(tmp_path: pathlib.Path) -> None:
    async with RaftControlPlane(solo(tmp_path)) as plane:
        with anyio.fail_after(10):
            await plane.wait_ready()
        wrong = ClusterConfig.join("b", free_addr(), tmp_path / "b", seed=plane.config.addr, password="guess")
        with pytest.raises(ClusterUnavailable, match="no answer"):
            async with RaftControlPlane(wrong):
                pass
        assert plane.raft_voters() == [plane.config.addr]


async def test_a_join_refused_until_its_deadline_fails_naming_the_seed(tmp_path: pathlib.Path) -> None:
    async with RaftControlPlane(solo(tmp_path, leader_step_down=30.0)) as plane:
        with anyio.fail_after(10):
            await plane.wait_ready()
        seed = plane.config.addr
        # A change the lone voter cannot commit (its new voter never starts) blocks every other one.
        with pytest.raises(ClusterUnavailable, match="no answer"):
            add_voter(seed, free_addr(), MessageAuthenticator(PASSWORD), timeout=0.3)
        tuning = RaftTuning(join_timeout=1.0)
        late = ClusterConfig.join(
            "b", free_addr(), tmp_path / "b", seed=seed, password=PASSWORD, tuning=tuning
        )
        with anyio.fail_after(10), pytest.raises(ClusterUnavailable) as refused:
            async with RaftControlPlane(late):
                pass
        assert f"cannot join through {seed}" in str(refused.value)
        assert "within 1 s (join_timeout)" in str(refused.value)


class _Exploit:
    def __init__(self, path: pathlib.Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (str(self.path), "w"))


async def test_an_unsigned_pickle_is_never_unpickled(plane: RaftControlPlane, tmp_path: pathlib.Path) -> None:
    marker = tmp_path / "pwned"
    data = zlib.compress(pickle.dumps(_Exploit(marker)), 3)
    host, _, port = plane.config.addr.rpartition(":")
    stream = await anyio.connect_tcp(host, int(port))
    async with stream:
        await stream.send(struct.pack("i", len(data)) + data)
        with anyio.move_on_after(2), contextlib.suppress(anyio.EndOfStream):
            await stream.receive()  # the node closes the connection
    assert not marker.exists()
    await plane.set("still", b"working")


def test_raft_names_are_exported_and_documented() -> None:
    import inspect

    import mocra_cluster

    for name in ("ClusterConfig", "RaftControlPlane", "RaftStatus", "RaftTuning"):
        assert name in mocra_cluster.__all__
        obj = getattr(mocra_cluster, name)
        assert inspect.getdoc(obj), name
        for attr, member in vars(obj).items():
            if not attr.startswith("_") and callable(member):
                assert inspect.getdoc(member), f"{name}.{attr}"


def test_readme_raft_example_prints_what_the_readme_says(tmp_path: pathlib.Path) -> None:
    import re
    import subprocess
    import sys

    text = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = text[text.index("## The Raft plane") :]
    code = re.search(r"^```python\n(.*?)^```$", section, flags=re.MULTILINE | re.DOTALL)
    expected = re.search(r"^```text\n(.*?)^```$", section, flags=re.MULTILINE | re.DOTALL)
    assert code is not None and expected is not None
    result = subprocess.run(
        [sys.executable, "-c", code.group(1)], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == expected.group(1)
