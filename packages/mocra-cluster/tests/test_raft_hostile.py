"""A hostile peer on the Raft port of a real 3-node cluster: the node drops it and keeps committing.

Each test attacks the node the writes go through (the leader) from a raw socket while a writer
keeps committing through it, then checks that the attacker's connection was closed, that no write
failed, and that the node's memory did not grow with what the attacker sent.
"""

from __future__ import annotations

import os
import socket
import struct
import time
import zlib
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
import msgspec
import pytest
from pysyncobj import pickle  # type: ignore[import-untyped]

from mocra_cluster import node_status
from mocra_cluster._config import ClusterConfig
from mocra_cluster._raft_auth import MessageAuthenticator
from mocra_cluster._raft_process import RaftProcess, RemoteError
from mocra_cluster._raft_tuning import RaftTuning

if TYPE_CHECKING:
    import pathlib
    from collections.abc import AsyncIterator

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

PASSWORD = "test-cluster-password"
MIB = 1 << 20


def free_addrs(count: int) -> list[str]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [f"127.0.0.1:{sock.getsockname()[1]}" for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


@asynccontextmanager
async def cluster(tmp_path: pathlib.Path, **settings: Any) -> AsyncIterator[list[RaftProcess]]:
    """Three voters on 127.0.0.1; `settings` replace fields of each node's `ClusterConfig`."""
    addrs = free_addrs(3)
    nodes = [
        RaftProcess(
            msgspec.structs.replace(
                ClusterConfig.bootstrap(f"n{i}", addr, tmp_path / f"n{i}", password=PASSWORD, peers=addrs),
                **settings,
            )
        )
        for i, addr in enumerate(addrs)
    ]
    async with AsyncExitStack() as stack:
        for node in nodes:
            stack.push_async_callback(node.stop)
        async with anyio.create_task_group() as group:
            for node in nodes:
                group.start_soon(node.start)
        async with anyio.create_task_group() as group:
            for node in nodes:
                group.start_soon(node.call, "wait_ready")
        yield nodes


async def leader_of(nodes: list[RaftProcess]) -> RaftProcess:
    with anyio.fail_after(10):
        while True:
            for node in nodes:
                if (await node.call("status"))["is_leader"]:
                    return node
            await anyio.sleep(0.05)


def memory_bytes(pid: int, field: str = "VmRSS") -> int:
    """The process's resident memory now (`VmRSS`) or at its peak so far (`VmHWM`)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} for pid {pid}")


@dataclass
class Writes:
    committed: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    changed: anyio.Event = field(default_factory=anyio.Event)

    def note(self, error: str | None) -> None:
        if error is None:
            self.committed.append(time.monotonic())
        else:
            self.errors.append(error)
        self.changed.set()
        self.changed = anyio.Event()

    async def more(self, count: int) -> None:
        """Wait until `count` more writes committed (or one failed)."""
        target = len(self.committed) + count
        with anyio.fail_after(10):
            while len(self.committed) < target and not self.errors:
                await self.changed.wait()


@asynccontextmanager
async def writing(node: RaftProcess) -> AsyncIterator[Writes]:
    """Commit `set`s through `node` one after another until the block ends."""
    writes = Writes()
    stop = anyio.Event()

    async def writer() -> None:
        for index in range(1_000_000):
            if stop.is_set():
                return
            try:
                await node.call("set", key=f"w/{index}", value="x" * 32)
            except RemoteError as exc:
                writes.note(str(exc))
            else:
                writes.note(None)

    async with anyio.create_task_group() as group:
        group.start_soon(writer)
        await writes.more(1)
        yield writes
        stop.set()


def connect(addr: str) -> socket.socket:
    host, _, port = addr.rpartition(":")
    return socket.create_connection((host, int(port)), timeout=2)


def is_closed(sock: socket.socket) -> bool:
    """Whether the peer closed `sock` (reads nothing it sent us)."""
    try:
        return sock.recv(1 << 16, socket.MSG_DONTWAIT | socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def wait_closed(sock: socket.socket, limit: float) -> float | None:
    """Seconds until the peer closed `sock`, or None if it is still open after `limit` seconds."""
    started = time.monotonic()
    while time.monotonic() - started < limit:
        if is_closed(sock):
            return time.monotonic() - started
        time.sleep(0.01)
    return None


@dataclass
class Stream:
    sent: int
    closed_after: float | None


def stream_after_prefix(addr: str, prefix: int, seconds: float) -> Stream:
    """Announce a frame of `prefix` bytes, then send zeros until the peer closes or `seconds` pass."""
    chunk = bytes(1 << 16)
    with connect(addr) as sock:
        sock.settimeout(0.2)
        started = time.monotonic()
        sock.sendall(struct.pack("i", prefix))
        sent = 0
        while time.monotonic() - started < seconds:
            try:
                sent += sock.send(chunk)
            except TimeoutError:
                if is_closed(sock):
                    break
            except OSError:
                break
        else:
            return Stream(sent, None)
        return Stream(sent, time.monotonic() - started)


def frame(authenticator: MessageAuthenticator, message: object, rand_key: bytes | None = None) -> bytes:
    """`message` as pysyncobj's connections put it on the wire (signed by `authenticator`)."""
    data = zlib.compress(pickle.dumps(message if rand_key is None else (rand_key, message)), 3)
    data = authenticator.encrypt_at_time(data, int(time.monotonic()))
    return struct.pack("i", len(data)) + data


def read_frame(sock: socket.socket, authenticator: MessageAuthenticator) -> object:
    def exactly(size: int) -> bytes:
        data = b""
        while len(data) < size:
            more = sock.recv(size - len(data))
            if not more:
                raise ConnectionError("closed")
            data += more
        return data

    (size,) = struct.unpack("i", exactly(4))
    return pickle.loads(zlib.decompress(authenticator.decrypt(exactly(size))))


async def test_a_huge_length_prefix_is_refused_before_it_is_buffered(tmp_path: pathlib.Path) -> None:
    async with cluster(tmp_path) as nodes:
        target = await leader_of(nodes)
        rss_before = memory_bytes(target.pid)
        async with writing(target) as writes:
            stream = await anyio.to_thread.run_sync(stream_after_prefix, target.addr, 2**31 - 1, 6.0)
            await writes.more(20)
        growth = memory_bytes(target.pid, "VmHWM") - rss_before
    assert writes.errors == []
    assert stream.closed_after is not None, f"the node read {stream.sent} bytes and kept the connection"
    assert stream.closed_after < 2.0
    assert growth < 32 * MIB, f"the node grew by {growth / MIB:.0f} MiB"


async def test_unauthenticated_connections_are_bounded_in_number_and_time(tmp_path: pathlib.Path) -> None:
    async with cluster(
        tmp_path,
        max_pending_connections=4,
        handshake_timeout=1.0,
        tuning=RaftTuning(connection_timeout=5.0),
    ) as nodes:
        target = await leader_of(nodes)
        async with writing(target) as writes:

            def attack() -> tuple[int, float | None, str]:
                idle = [connect(target.addr) for _ in range(6)]
                drip = [connect(target.addr) for _ in range(6)]  # a byte of a frame every 0.1 s
                for sock in drip:
                    sock.sendall(struct.pack("i", 200))
                try:
                    time.sleep(0.3)
                    open_soon = sum(not is_closed(sock) for sock in idle + drip)
                    # a real client still gets in (it evicts the oldest unauthenticated connection)
                    status = node_status(target.addr, password=PASSWORD, timeout=3.0)
                    started = time.monotonic()
                    while time.monotonic() - started < 4.0:
                        for sock in drip:
                            if not is_closed(sock):
                                sock.send(b"\0")
                        if all(is_closed(sock) for sock in idle + drip):
                            return open_soon, time.monotonic() - started, status.state
                        time.sleep(0.1)
                    return open_soon, None, status.state
                finally:
                    for sock in idle + drip:
                        sock.close()

            open_soon, all_closed_after, state = await anyio.to_thread.run_sync(attack)
            await writes.more(20)
    assert open_soon <= 4
    assert all_closed_after is not None, "connections that never authenticate stayed open"
    assert state == "leader"
    assert writes.errors == []


async def test_garbage_and_wrong_password_frames_close_the_connection(tmp_path: pathlib.Path) -> None:
    async with cluster(tmp_path, max_frame_bytes=MIB, tuning=RaftTuning(connection_timeout=5.0)) as nodes:
        target = await leader_of(nodes)
        rss_before = memory_bytes(target.pid)
        async with writing(target) as writes:

            def attack() -> dict[str, float | None]:
                closed: dict[str, float | None] = {}
                with connect(target.addr) as sock:
                    sock.sendall(struct.pack("i", 200) + os.urandom(200))
                    closed["garbage"] = wait_closed(sock, 2.0)
                with connect(target.addr) as sock:
                    sock.sendall(struct.pack("i", -5) + os.urandom(64))
                    closed["negative length"] = wait_closed(sock, 2.0)
                with connect(target.addr) as sock:
                    sock.sendall(frame(MessageAuthenticator("a-guess"), os.urandom(32)))
                    closed["wrong password"] = wait_closed(sock, 2.0)
                with connect(target.addr) as sock:  # more than a handshake frame, before signing in
                    sock.sendall(struct.pack("i", 100_000) + bytes(1000))
                    closed["large first frame"] = wait_closed(sock, 2.0)
                with connect(target.addr) as sock:  # signed in, then a frame over max_frame_bytes
                    auth = MessageAuthenticator(PASSWORD)
                    mine = os.urandom(32)
                    sock.sendall(frame(auth, mine))
                    key, theirs = read_frame(sock, auth)  # type: ignore[misc]
                    assert key == mine
                    sock.sendall(frame(auth, ["status"], rand_key=theirs))
                    key, status = read_frame(sock, auth)  # type: ignore[misc]
                    assert key == mine and isinstance(status, dict)
                    sock.sendall(struct.pack("i", MIB + 1) + bytes(1000))
                    closed["oversized frame"] = wait_closed(sock, 2.0)
                return closed

            closed = await anyio.to_thread.run_sync(attack)
            await writes.more(20)
        growth = memory_bytes(target.pid, "VmHWM") - rss_before
    assert {name: after is not None and after < 1.0 for name, after in closed.items()} == dict.fromkeys(
        closed, True
    ), closed
    assert writes.errors == []
    assert growth < 32 * MIB


async def test_a_value_larger_than_a_frame_is_refused_by_name(tmp_path: pathlib.Path) -> None:
    async with cluster(tmp_path, max_frame_bytes=MIB) as nodes:
        target = await leader_of(nodes)
        follower = next(node for node in nodes if node is not target)
        with pytest.raises(RemoteError, match="max_frame_bytes") as refused:
            await follower.call("set", key="big", value="x" * (2 * MIB))
        assert refused.value.kind == "ClusterError"
        await follower.call("set", key="small", value="x" * 1000)
        assert await target.call("get", key="small", linearizable=True) == "x" * 1000
