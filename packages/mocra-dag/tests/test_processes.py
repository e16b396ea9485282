"""LMDB stores across real processes: resume after a failure, exclusion, recovery after kill -9."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import TYPE_CHECKING

import anyio

from mocra_dag import (
    Graph,
    Inputs,
    LmdbLeaseStore,
    LmdbRunStateStore,
    ManualClock,
    NodeStatus,
    RunAlreadyActive,
    RunGuard,
    Scheduler,
)

if TYPE_CHECKING:
    import pathlib

WORKER = """
import sys

import anyio

from mocra_dag import Graph, LmdbLeaseStore, LmdbRunStateStore, RunFailed, RunGuard, Scheduler

path, mode = sys.argv[1], sys.argv[2]


async def extract(inputs):
    print("extract ran", flush=True)
    return [1, 2, 3]


async def load(inputs):
    if mode == "fail":
        raise ConnectionError("warehouse is down")
    if mode == "hang":
        print("holding", flush=True)
        await anyio.sleep(60)
    return sum(inputs.value)


async def main():
    async with LmdbRunStateStore(path) as state, LmdbLeaseStore(path) as leases:
        scheduler = Scheduler(store=state, guard=RunGuard(leases, ttl=30))
        try:
            result = await scheduler.run(Graph.chain(("extract", extract), ("load", load)), run_id="nightly")
            print("result", result.outputs["load"], flush=True)
        except RunFailed as exc:
            print("failed", exc.errors["load"], flush=True)


anyio.run(main)
"""


def worker(path: pathlib.Path, mode: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-I", "-c", WORKER, str(path), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str]) -> list[str]:
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    return out.splitlines()


def test_a_run_failed_in_one_process_resumes_in_the_next(tmp_path: pathlib.Path) -> None:
    assert finish(worker(tmp_path, "fail")) == ["extract ran", "failed warehouse is down"]
    assert finish(worker(tmp_path, "ok")) == ["result 6"]  # extract was not run again


def test_a_killed_holder_blocks_the_run_until_its_lease_expires(tmp_path: pathlib.Path) -> None:
    holder = worker(tmp_path, "hang")
    try:
        assert holder.stdout is not None
        assert [holder.stdout.readline().strip() for _ in range(2)] == ["extract ran", "holding"]

        async def load(inputs: Inputs) -> int:
            return sum(inputs.value)

        async def extract(inputs: Inputs) -> list[int]:
            raise AssertionError("extract succeeded before: it must be restored, not re-run")

        graph = Graph.chain(("extract", extract), ("load", load))

        async def attempt(clock: ManualClock | None) -> object:
            async with LmdbRunStateStore(tmp_path) as state, LmdbLeaseStore(tmp_path, clock=clock) as leases:
                scheduler = Scheduler(store=state, guard=RunGuard(leases, ttl=30))
                try:
                    return await scheduler.run(graph, run_id="nightly")
                except RunAlreadyActive as exc:
                    return exc

        refused = anyio.run(attempt, None)
        assert isinstance(refused, RunAlreadyActive)
        held_token = refused.holder.token  # type: ignore[attr-defined]

        holder.kill()  # kill -9: no release, the lease stays until it expires
        holder.wait(timeout=10)
        assert isinstance(anyio.run(attempt, None), RunAlreadyActive)

        later = ManualClock(time.time() + 31)  # as if 31 s had passed
        result = anyio.run(attempt, later)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(timeout=10)
        for stream in (holder.stdout, holder.stderr):
            if stream is not None:
                stream.close()
    assert result.outputs == {"extract": [1, 2, 3], "load": 6}  # type: ignore[attr-defined]
    assert result.statuses["extract"] is NodeStatus.RESTORED  # type: ignore[attr-defined]

    async def next_token() -> int:
        async with LmdbLeaseStore(tmp_path) as leases:
            lease = await leases.acquire("another", owner="me", ttl=1)
            assert lease is not None
            return lease.token

    assert anyio.run(next_token) > held_token + 1  # the takeover got a newer token, and so on
