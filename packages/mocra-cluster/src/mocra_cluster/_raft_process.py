"""One Raft node in a child process, driven over stdin/stdout: for tests and benchmarks that kill -9.

The child (`python -m mocra_cluster._raft_process`) reads its `ClusterConfig` as one JSON line,
starts a `RaftControlPlane`, prints `ready`, then answers one JSON request per line with one JSON
reply per line: `{"op": "set", "key": "k", "value": "v"}` -> `{"ok": null}`; a cluster error comes
back as `{"error": "NoQuorum", "message": "..."}`. Closing its stdin stops it cleanly. Its log goes
to `node.log` in its data directory. `RaftProcess` is the parent's handle.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any, Self

import anyio
import msgspec
from anyio.streams.buffered import BufferedByteReceiveStream

from ._config import ClusterConfig
from ._errors import ClusterError
from ._raft import RaftControlPlane

if TYPE_CHECKING:
    from types import TracebackType

    from anyio.abc import Process

__all__ = ("RaftProcess", "RemoteError")


class RemoteError(ClusterError):
    """The child answered a request with an error; `kind` is the name of its exception class."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind


# ---------------------------------------------------------------------- child side


async def _timed_writes(plane: RaftControlPlane, count: int, concurrency: int) -> dict[str, Any]:
    """Write `count` keys with `concurrency` writers; return each write's latency and the wall time."""
    latencies: list[float] = []
    next_index = iter(range(count))

    async def writer() -> None:
        for index in next_index:
            started = time.perf_counter()
            await plane.set(f"bench/{index}", b"x" * 64)
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for _ in range(concurrency):
            group.start_soon(writer)
    return {"latencies": latencies, "elapsed": time.perf_counter() - started}


async def _answer(plane: RaftControlPlane, request: dict[str, Any]) -> object:
    op = request["op"]
    if op == "status":
        return msgspec.to_builtins(plane.raft_status())
    if op == "wait_ready":
        with anyio.fail_after(request.get("timeout", 20)):
            await plane.wait_ready()
        return None
    if op == "set":
        await plane.set(request["key"], request["value"].encode(), ttl=request.get("ttl"))
        return None
    if op == "get":
        value = await plane.get(request["key"], linearizable=request.get("linearizable", False))
        return None if value is None else value.decode()
    if op == "acquire_lock":
        return await plane.acquire_lock(request["key"], request["holder"], request["ttl"])
    if op == "lock":
        grant = await plane.lock_holder(request["key"], linearizable=request.get("linearizable", False))
        return (
            None
            if grant is None
            else {"holder": grant.holder, "token": grant.token, "expires": grant.expires}
        )
    if op == "fence":
        return await plane.fence(linearizable=request.get("linearizable", False))
    if op == "compact":
        plane.compact()
        return None
    if op == "remove_voter":
        await plane.remove_voter(request["addr"])
        return None
    if op == "members":
        return [member.member_id for member in await plane.members()]
    if op == "live_members":
        return [member.member_id for member in await plane.live_members()]
    if op == "owned_partitions":
        return await plane.owned_partitions()
    if op == "timed_writes":
        return await _timed_writes(plane, request["count"], request.get("concurrency", 1))
    raise ValueError(f"unknown op {op!r}")


async def _serve() -> None:
    stdin = anyio.wrap_file(sys.stdin)
    config = msgspec.json.decode(await stdin.readline(), type=ClusterConfig)
    logging.basicConfig(
        filename=os.path.join(config.data_dir, "node.log"),
        level=logging.INFO,
        format="%(asctime)s %(threadName)s %(name)s %(levelname)s %(message)s",
    )
    async with RaftControlPlane(config) as plane:
        print("ready", flush=True)  # noqa: T201 - the control channel
        async for line in stdin:
            if not line.strip():
                continue
            try:
                reply: dict[str, object] = {"ok": await _answer(plane, msgspec.json.decode(line))}
            except Exception as exc:
                reply = {"error": type(exc).__name__, "message": str(exc)}
            print(msgspec.json.encode(reply).decode(), flush=True)  # noqa: T201


# ---------------------------------------------------------------------- parent side


class RaftProcess:
    """A Raft node in a child process; `async with` starts it and stops (or has killed) it.

    Example:
        >>> import socket, tempfile
        >>> with socket.socket() as probe:
        ...     _ = probe.bind(("127.0.0.1", 0)); port = probe.getsockname()[1]
        >>> async def main(data_dir: str) -> object:
        ...     config = ClusterConfig.bootstrap("a", f"127.0.0.1:{port}", data_dir, password="pw")
        ...     async with RaftProcess(config) as node:
        ...         await node.call("wait_ready")
        ...         await node.call("set", key="k", value="v")
        ...         return await node.call("get", key="k")
        >>> with tempfile.TemporaryDirectory() as data_dir:
        ...     anyio.run(main, data_dir)
        'v'
    """

    def __init__(self, config: ClusterConfig) -> None:
        self.config = config
        self._process: Process | None = None
        self._stdout: BufferedByteReceiveStream | None = None
        self._lock = anyio.Lock()

    @property
    def addr(self) -> str:
        """The node's Raft address."""
        return self.config.addr

    @property
    def pid(self) -> int:
        """The child's process id (for `/proc/<pid>/status`).

        Raises:
            ClusterError: the child is not running.
        """
        if self._process is None:
            raise ClusterError(f"node {self.config.node_id} is not running")
        return self._process.pid

    async def start(self) -> None:
        """Start the child and wait until its node is up (bound, Raft thread running)."""
        os.makedirs(self.config.data_dir, exist_ok=True)
        self._process = await anyio.open_process(
            [sys.executable, "-m", "mocra_cluster._raft_process"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None,
        )
        assert self._process.stdin is not None and self._process.stdout is not None
        self._stdout = BufferedByteReceiveStream(self._process.stdout)
        await self._process.stdin.send(msgspec.json.encode(self.config) + b"\n")
        with anyio.fail_after(20):
            line = await self._stdout.receive_until(b"\n", 1 << 20)
        if line != b"ready":
            raise ClusterError(f"node {self.config.node_id} did not start: {line!r}")

    async def call(self, op: str, **args: Any) -> Any:
        """Send one request and return the child's answer.

        Raises:
            RemoteError: the child's call raised (`kind` names the exception, e.g. `NoQuorum`).
        """
        if self._process is None or self._process.stdin is None or self._stdout is None:
            raise ClusterError(f"node {self.config.node_id} is not running")
        async with self._lock:
            await self._process.stdin.send(msgspec.json.encode({"op": op, **args}) + b"\n")
            line = await self._stdout.receive_until(b"\n", 1 << 26)
        reply = msgspec.json.decode(line)
        if "error" in reply:
            raise RemoteError(reply["error"], reply["message"])
        return reply["ok"]

    def kill(self) -> None:
        """Send SIGKILL (no cleanup in the child: its sockets reset, its journal stays as written)."""
        if self._process is not None and self._process.returncode is None:
            self._process.kill()

    async def stop(self) -> None:
        """Stop the child: close its stdin (a clean shutdown), kill it after 10 s, and reap it."""
        process, self._process = self._process, None
        if process is None:
            return
        with anyio.CancelScope(shield=True):
            if process.returncode is None:
                assert process.stdin is not None
                await process.stdin.aclose()
                with anyio.move_on_after(10):
                    await process.wait()
                if process.returncode is None:
                    process.kill()
            await process.aclose()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()


if __name__ == "__main__":
    anyio.run(_serve)
