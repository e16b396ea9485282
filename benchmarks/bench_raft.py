"""Measure the Raft control plane: leader failover time, sync write latency, pipelined write throughput.

Run: `uv run python benchmarks/bench_raft.py`
     (options: `--kills 5 --writes 500 --pipelined 5000 --concurrency 100`)

Three nodes, each a child process on 127.0.0.1 (`mocra_cluster._raft_process`), default `RaftTuning`.

* failover: kill -9 the leader, then time until a write through a survivor is committed (the write
  waits for the election); the killed node restarts from its journal before the next kill. Median
  of `--kills` kills.
* latency: `--writes` sequential `set` calls of 64 bytes, timed inside the node, through the leader
  and through a follower (forwarded to the leader); p50 / p99.
* throughput: `--pipelined` writes with `--concurrency` concurrent writers inside one node, through
  the leader, with entries sent at once (`batch_appends=False`, the default) and batched with the
  next heartbeat (`batch_appends=True`).
"""

from __future__ import annotations

import argparse
import socket
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio

from mocra_cluster import ClusterConfig, RaftTuning
from mocra_cluster._raft_process import RaftProcess

PASSWORD = "bench-password"


def say(line: str) -> None:
    """Print one line of the report."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def free_addrs(count: int) -> list[str]:
    """Distinct free ports on 127.0.0.1."""
    sockets = [socket.socket() for _ in range(count)]
    for sock in sockets:
        sock.bind(("127.0.0.1", 0))
    addrs = [f"127.0.0.1:{sock.getsockname()[1]}" for sock in sockets]
    for sock in sockets:
        sock.close()
    return addrs


def configs(root: Path, tuning: RaftTuning) -> list[ClusterConfig]:
    """Bootstrap configs of a 3-voter cluster."""
    addrs = free_addrs(3)
    return [
        ClusterConfig.bootstrap(f"n{i}", addr, root / f"n{i}", password=PASSWORD, peers=addrs, tuning=tuning)
        for i, addr in enumerate(addrs)
    ]


async def leader_of(nodes: list[RaftProcess]) -> RaftProcess:
    """The node that leads, once all given nodes agree."""
    while True:
        statuses = [await node.call("status") for node in nodes]
        if len({s["leader"] for s in statuses}) == 1:
            for node, status in zip(nodes, statuses, strict=True):
                if status["is_leader"]:
                    return node
        await anyio.sleep(0.02)


async def start_all(nodes: list[RaftProcess]) -> None:
    """Start the nodes together and wait until each is ready."""
    async with anyio.create_task_group() as group:
        for node in nodes:
            group.start_soon(node.start)
    async with anyio.create_task_group() as group:
        for node in nodes:
            group.start_soon(node.call, "wait_ready")


def percentile(values: list[float], share: float) -> float:
    """The `share` quantile (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def failover(root: Path, kills: int) -> list[float]:
    """Seconds from kill -9 of the leader to the first write committed through a survivor."""
    nodes = [RaftProcess(config) for config in configs(root, RaftTuning())]
    times = []

    async def stop_all() -> None:
        for node in nodes:  # the current processes, restarted ones included
            await node.stop()

    async with AsyncExitStack() as stack:
        stack.push_async_callback(stop_all)
        await start_all(nodes)
        for round_ in range(kills):
            leader = await leader_of(nodes)
            survivor = next(node for node in nodes if node is not leader)
            await survivor.call("set", key="warm", value=str(round_))
            leader.kill()
            started = time.perf_counter()
            await survivor.call("set", key="after-kill", value=str(round_))
            times.append(time.perf_counter() - started)
            await leader.stop()
            index = nodes.index(leader)
            nodes[index] = RaftProcess(leader.config)  # restart from its journal
            await nodes[index].start()
            await nodes[index].call("wait_ready")
            say(f"  kill {round_ + 1}: first commit after {times[-1] * 1000:.0f} ms")
    return times


async def writes(root: Path, count: int, pipelined: int, concurrency: int) -> None:
    """Latency through the leader and a follower; throughput with concurrent writers."""
    for batch in (False, True):
        nodes = [
            RaftProcess(config)
            for config in configs(root / f"batch-{batch}", RaftTuning(batch_appends=batch))
        ]
        async with AsyncExitStack() as stack:
            for node in nodes:
                stack.push_async_callback(node.stop)
            await start_all(nodes)
            leader = await leader_of(nodes)
            follower = next(node for node in nodes if node is not leader)
            for name, node in (("leader", leader), ("follower", follower)):
                result = await node.call("timed_writes", count=count, concurrency=1)
                lat = result["latencies"]
                p50, p99 = percentile(lat, 0.5) * 1000, percentile(lat, 0.99) * 1000
                say(
                    f"  batch_appends={batch!s:5} sync writes via {name:8}: p50 {p50:6.2f} ms"
                    f"  p99 {p99:6.2f} ms  ({count / result['elapsed']:,.0f}/s)"
                )
            result = await leader.call("timed_writes", count=pipelined, concurrency=concurrency)
            lat = result["latencies"]
            say(
                f"  batch_appends={batch!s:5} {concurrency} concurrent writers via leader: "
                f"{pipelined / result['elapsed']:,.0f} writes/s  (p50 {percentile(lat, 0.5) * 1000:.1f} ms, "
                f"p99 {percentile(lat, 0.99) * 1000:.1f} ms)"
            )


async def main(args: argparse.Namespace) -> None:
    """Run every measurement and print the report."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        say(f"failover, 3 nodes, {args.kills} kills of the leader (default RaftTuning):")
        times = await failover(root / "failover", args.kills)
        say(f"  median {statistics.median(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms")
        say("writes, 3 nodes, 64-byte values:")
        await writes(root / "writes", args.writes, args.pipelined, args.concurrency)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--writes", type=int, default=500)
    parser.add_argument("--pipelined", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=100)
    anyio.run(main, parser.parse_args())
