"""Measure the commit rate of a 3-node Raft cluster while a stranger attacks the leader's Raft port.

Run: `uv run python benchmarks/bench_raft_hostile.py` (options: `--writes 1500 --rounds 2`)

Three nodes, each a child process on 127.0.0.1 (`mocra_cluster._raft_process`), default settings.
Each phase times `--writes` sequential 64-byte `set`s inside the leader (`timed_writes`) while one
attack of `raft_attacks.py` runs flat out from a thread of this process against the leader's Raft
port, without the password:

* none: no attack (the baseline; run first and last of every round);
* huge-prefix: announce a 2 GiB frame, then stream zeros; reconnect when dropped;
* idle: hold 200 connections that send nothing (reopen those the node closes);
* garbage: frames of random bytes, of a negative length, and signed with a wrong password, each on
  a new connection, one after another.

Prints each phase's writes per second, its ratio to the baseline of the same round, the p99
latency, how many attack connections the node dropped, and the leader's peak RSS (`VmHWM`).
"""

from __future__ import annotations

import argparse
import socket
import statistics
import sys
import tempfile
import threading
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread
from raft_attacks import ATTACKS as STRANGERS
from raft_attacks import Pace, Tally

from mocra_cluster import ClusterConfig
from mocra_cluster._raft_process import RaftProcess

if TYPE_CHECKING:
    from collections.abc import Callable

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


def peak_rss_mib(pid: int) -> float:
    """The process's peak resident memory so far, MiB."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


ATTACKS: dict[str, Callable[[str, threading.Event, Pace | None], Tally] | None] = {"none": None, **STRANGERS}
PHASES = ("none", "huge-prefix", "idle", "garbage", "none")
"""One round: a baseline, each attack, a baseline again (the ratios are to the first)."""


async def phase(
    leader: RaftProcess, writes: int, attack: Callable[[str, threading.Event, Pace | None], Tally] | None
) -> dict[str, float]:
    """Time `writes` sets through `leader` while `attack` runs against it."""
    stop = threading.Event()
    tallies: list[Tally] = []
    async with anyio.create_task_group() as group:
        if attack is not None:

            async def attacker() -> None:
                tallies.append(await anyio.to_thread.run_sync(attack, leader.addr, stop, None))

            group.start_soon(attacker)
            await anyio.sleep(0.3)  # the attack is under way
        result = await leader.call("timed_writes", count=writes, concurrency=1)
        stop.set()
    latencies = sorted(result["latencies"])
    return {
        "rate": writes / result["elapsed"],
        "p99_ms": 1000 * latencies[int(0.99 * (len(latencies) - 1))],
        "dropped": float(sum(tally.dropped for tally in tallies)),
    }


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as root:
        addrs = free_addrs(3)
        nodes = [
            RaftProcess(
                ClusterConfig.bootstrap(f"n{i}", addr, Path(root) / f"n{i}", password=PASSWORD, peers=addrs)
            )
            for i, addr in enumerate(addrs)
        ]
        async with AsyncExitStack() as stack:
            for node in nodes:
                await node.start()
                stack.push_async_callback(node.stop)
            for node in nodes:
                await node.call("wait_ready")
            statuses = [await node.call("status") for node in nodes]
            leader = next(node for node, status in zip(nodes, statuses, strict=True) if status["is_leader"])
            await leader.call("timed_writes", count=200)  # warm up
            say(f"3 nodes on 127.0.0.1, {args.writes} sequential 64-byte sets through the leader per phase")
            say(
                f"{'round':>5} {'attack':<12} {'writes/s':>9} {'ratio':>6} {'p99 ms':>7} {'dropped':>8} "
                f"{'peak RSS':>11}"
            )
            ratios: dict[str, list[float]] = {}
            for round_ in range(1, args.rounds + 1):
                baseline = 0.0
                for index, name in enumerate(PHASES):
                    measured = await phase(leader, args.writes, ATTACKS[name])
                    baseline = baseline or measured["rate"]
                    ratio = measured["rate"] / baseline
                    if index:
                        ratios.setdefault(name if index < len(PHASES) - 1 else "none again", []).append(ratio)
                    say(
                        f"{round_:>5} {name:<12} {measured['rate']:>9.0f} {ratio:>6.2f} "
                        f"{measured['p99_ms']:>7.1f} {measured['dropped']:>8.0f} "
                        f"{peak_rss_mib(leader.pid):>7.0f} MiB"
                    )
            say(
                "median ratio to the round's first baseline: "
                + ", ".join(f"{name} {statistics.median(values):.2f}" for name, values in ratios.items())
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=1500)
    parser.add_argument("--rounds", type=int, default=2)
    anyio.run(main, parser.parse_args())
