"""The Raft plane across real OS processes on 127.0.0.1: election, failover, quorum loss, joins, removal."""

from __future__ import annotations

import socket
import time
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING

import anyio
import pytest

from mocra_cluster import PARTITIONS, Liveness
from mocra_cluster._config import ClusterConfig
from mocra_cluster._raft_process import RaftProcess, RemoteError
from mocra_cluster._raft_tuning import RaftTuning

if TYPE_CHECKING:
    import pathlib
    from collections.abc import AsyncIterator

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

PASSWORD = "test-cluster-password"


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
async def cluster(
    tmp_path: pathlib.Path, size: int = 3, tuning: RaftTuning | None = None
) -> AsyncIterator[list[RaftProcess]]:
    addrs = free_addrs(size)
    nodes = [
        RaftProcess(
            ClusterConfig.bootstrap(
                f"n{i}", addr, tmp_path / f"n{i}", password=PASSWORD, peers=addrs, tuning=tuning
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


async def leader_of(nodes: list[RaftProcess], limit: float = 10.0) -> RaftProcess:
    """The node every given node agrees leads."""
    with anyio.fail_after(limit):
        while True:
            statuses = [await node.call("status") for node in nodes]
            leaders = {status["leader"] for status in statuses}
            if len(leaders) == 1 and None not in leaders:
                [leader] = [node for node, s in zip(nodes, statuses, strict=True) if s["is_leader"]] or [None]
                if leader is not None:
                    return leader
            await anyio.sleep(0.05)


async def test_three_nodes_elect_one_leader_and_replicate(tmp_path: pathlib.Path) -> None:
    async with cluster(tmp_path) as nodes:
        leader = await leader_of(nodes)
        followers = [node for node in nodes if node is not leader]
        await leader.call("set", key="k", value="v1")
        for node in followers:
            assert await node.call("get", key="k", linearizable=True) == "v1"
        terms = {(await node.call("status"))["term"] for node in nodes}
        assert len(terms) == 1
        assert sorted(await nodes[0].call("members")) == ["n0", "n1", "n2"]


async def test_leader_kill_elects_a_new_leader_and_followers_forward_writes(tmp_path: pathlib.Path) -> None:
    async with cluster(tmp_path) as nodes:
        leader = await leader_of(nodes)
        token = await leader.call("acquire_lock", key="job", holder="w1", ttl=60)
        survivors = [node for node in nodes if node is not leader]
        term_before = (await survivors[0].call("status"))["term"]
        leader.kill()
        started = time.monotonic()
        new_leader = await leader_of(survivors)
        elected_after = time.monotonic() - started
        follower = next(node for node in survivors if node is not new_leader)
        await follower.call("set", key="after", value="failover")  # forwarded to the new leader
        assert await new_leader.call("get", key="after", linearizable=True) == "failover"
        assert (await new_leader.call("status"))["term"] > term_before
        grant = await follower.call("lock", key="job", linearizable=True)
        assert (grant["holder"], grant["token"]) == ("w1", token)
        assert await follower.call("acquire_lock", key="other", holder="w2", ttl=60) == token + 1
        assert elected_after < 10


async def test_survivor_of_two_failures_refuses_writes_and_locks(tmp_path: pathlib.Path) -> None:
    async with cluster(tmp_path) as nodes:
        await nodes[0].call("set", key="k", value="v")
        survivor = nodes[2]
        assert await survivor.call("get", key="k", linearizable=True) == "v"
        nodes[0].kill()
        nodes[1].kill()
        await anyio.sleep(0.3)  # the resets reach the survivor
        started = time.monotonic()
        with pytest.raises(RemoteError) as write:
            await survivor.call("set", key="k", value="lost")
        with pytest.raises(RemoteError) as lock:
            await survivor.call("acquire_lock", key="job", holder="w", ttl=60)
        assert (write.value.kind, lock.value.kind) == ("NoQuorum", "NoQuorum")
        assert time.monotonic() - started < RaftTuning().commit_timeout * 2 + 1
        assert await survivor.call("get", key="k") == "v"  # local reads still answer


async def test_new_node_joins_and_catches_up_from_a_snapshot(tmp_path: pathlib.Path) -> None:
    tuning = RaftTuning(compaction_min_entries=20)
    async with cluster(tmp_path, tuning=tuning) as nodes:
        leader = await leader_of(nodes)
        for i in range(60):
            await leader.call("set", key=f"k{i}", value=str(i))
        fence = await leader.call("acquire_lock", key="job", holder="w", ttl=60)
        for node in nodes:
            await node.call("compact")
        await anyio.sleep(0.5)
        [addr] = free_addrs(1)
        config = ClusterConfig.join(
            "n3", addr, tmp_path / "n3", seed=nodes[1].addr, password=PASSWORD, tuning=tuning
        )
        async with RaftProcess(config) as newcomer:
            await newcomer.call("wait_ready")
            assert await newcomer.call("get", key="k0", linearizable=True) == "0"
            assert await newcomer.call("get", key="k59") == "59"
            assert await newcomer.call("fence") == fence
            assert (tmp_path / "n3" / "raft.snapshot").exists()  # installed from the leader
            assert addr in (await leader.call("status"))["voters"]
            await newcomer.call("set", key="from-newcomer", value="x")
            assert await leader.call("get", key="from-newcomer", linearizable=True) == "x"


async def test_removing_a_voter_leaves_a_working_quorum(tmp_path: pathlib.Path) -> None:
    async with cluster(tmp_path) as nodes:
        leader = await leader_of(nodes)
        leaving = next(node for node in nodes if node is not leader)
        staying = [node for node in nodes if node is not leaving]
        await staying[0].call("remove_voter", addr=leaving.addr)
        leaving.kill()
        for node in staying:
            with anyio.fail_after(5):
                while leaving.addr in (await node.call("status"))["voters"]:  # noqa: ASYNC110
                    await anyio.sleep(0.05)
        await staying[1].call("set", key="k", value="two voters")  # 2 of 2: still a majority
        assert await staying[0].call("get", key="k", linearizable=True) == "two voters"
        assert leaving.config.node_id not in await staying[0].call("members")


async def test_killed_single_node_restarts_with_kv_locks_and_fencing_counter(tmp_path: pathlib.Path) -> None:
    [addr] = free_addrs(1)
    config = ClusterConfig.bootstrap(
        "solo", addr, tmp_path / "solo", password=PASSWORD, tuning=RaftTuning(compaction_min_entries=10)
    )
    node = RaftProcess(config)
    async with node:
        await node.call("wait_ready")
        await node.call("set", key="before-snapshot", value="1")
        assert await node.call("acquire_lock", key="a", holder="w", ttl=600) == 1
        await node.call("compact")
        await anyio.sleep(0.3)
        assert await node.call("acquire_lock", key="b", holder="w", ttl=600) == 2
        await node.call("set", key="after-snapshot", value="2")  # only in the journal
        node.kill()
    async with RaftProcess(config) as again:
        await again.call("wait_ready")
        assert await again.call("get", key="before-snapshot") == "1"
        assert await again.call("get", key="after-snapshot") == "2"
        assert (await again.call("lock", key="a"))["holder"] == "w"
        assert await again.call("fence") == 2
        assert await again.call("acquire_lock", key="c", holder="w", ttl=600) == 3


# ---------------------------------------------------------------------- joins and liveness


def joiner(tmp_path: pathlib.Path, name: str, seed: str, tuning: RaftTuning | None = None) -> RaftProcess:
    [addr] = free_addrs(1)
    return RaftProcess(
        ClusterConfig.join(name, addr, tmp_path / name, seed=seed, password=PASSWORD, tuning=tuning)
    )


async def test_nodes_join_a_single_node_cluster_one_after_the_other(tmp_path: pathlib.Path) -> None:
    [addr] = free_addrs(1)
    first = RaftProcess(ClusterConfig.bootstrap("n0", addr, tmp_path / "n0", password=PASSWORD))
    async with AsyncExitStack() as stack:
        await stack.enter_async_context(first)
        await first.call("wait_ready")
        await first.call("set", key="before", value="1")
        nodes = [first]
        for name in ("n1", "n2"):
            node = await stack.enter_async_context(joiner(tmp_path, name, seed=addr))
            await node.call("wait_ready", timeout=15)
            nodes.append(node)
            await node.call("set", key=f"from-{name}", value=name)  # commits go on after each join
        voters = sorted(node.addr for node in nodes)
        for node in nodes:
            status = await node.call("status")
            assert (status["voters"], status["term"]) == (voters, 1)  # nobody was deposed
            for key, value in (("before", "1"), ("from-n1", "n1"), ("from-n2", "n2")):
                assert await node.call("get", key=key, linearizable=True) == value
            assert sorted(await node.call("members")) == ["n0", "n1", "n2"]
        first.kill()  # three voters: the two others are a majority
        await leader_of(nodes[1:])
        await nodes[2].call("set", key="after", value="kill")
        assert await nodes[1].call("get", key="after", linearizable=True) == "kill"


async def test_two_nodes_joining_at_once_both_become_voters(tmp_path: pathlib.Path) -> None:
    [addr] = free_addrs(1)
    first = RaftProcess(ClusterConfig.bootstrap("n0", addr, tmp_path / "n0", password=PASSWORD))
    newcomers = [joiner(tmp_path, name, seed=addr) for name in ("n1", "n2")]
    async with AsyncExitStack() as stack:
        await stack.enter_async_context(first)
        await first.call("wait_ready")
        for node in newcomers:
            stack.push_async_callback(node.stop)
        started = time.monotonic()
        async with anyio.create_task_group() as group:  # both ask the seed at once: one change at a time
            for node in newcomers:
                group.start_soon(node.start)
        for node in newcomers:
            await node.call("wait_ready", timeout=15)
        joined_after = time.monotonic() - started
        voters = sorted([addr, *(node.addr for node in newcomers)])
        for node in [first, *newcomers]:
            assert (await node.call("status"))["voters"] == voters
        await newcomers[0].call("set", key="k", value="v")
        assert await newcomers[1].call("get", key="k", linearizable=True) == "v"
        assert joined_after < 20


async def test_survivors_own_every_partition_once_after_a_sigkill(tmp_path: pathlib.Path) -> None:
    liveness = Liveness(heartbeat_interval=0.2, member_ttl=1.0)
    async with cluster(tmp_path, tuning=RaftTuning(liveness=liveness)) as nodes:
        # each node judges liveness on its own clock: under load the views may briefly disagree
        with anyio.fail_after(liveness.member_ttl + 5):
            while True:
                shares = [await node.call("owned_partitions") for node in nodes]
                if sorted(p for share in shares for p in share) == list(range(PARTITIONS)):
                    break
                await anyio.sleep(0.1)
        assert all(shares)
        victim, survivors = nodes[0], nodes[1:]
        victim.kill()
        killed = time.monotonic()
        with anyio.fail_after(liveness.member_ttl + 5):
            while True:  # as above: a survivor may briefly see the other as gone too (then it owns all)
                shares = [await node.call("owned_partitions") for node in survivors]
                if sorted(p for share in shares for p in share) == list(range(PARTITIONS)) and all(shares):
                    break
                await anyio.sleep(0.1)
        moved_after = time.monotonic() - killed
        assert moved_after >= liveness.member_ttl - 0.5  # not before the TTL
        for node in survivors:
            assert sorted(await node.call("live_members")) == ["n1", "n2"]
            assert sorted(await node.call("members")) == ["n0", "n1", "n2"]  # listed until removed
