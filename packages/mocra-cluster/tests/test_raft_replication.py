"""How the leader's `_ReplicatedLog` moves a follower's next index (pysyncobj's replication bookkeeping)."""

from __future__ import annotations

import socket
import time
from typing import TYPE_CHECKING

from pysyncobj.node import TCPNode  # type: ignore[import-untyped]

from mocra_cluster import ClusterConfig, MemoryStateStore, StateMachine
from mocra_cluster._raft_start import start_node

if TYPE_CHECKING:
    import pathlib


def free_addr() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


def reply(next_index: int, *, success: bool, reset: bool) -> dict[str, object]:
    return {"type": "next_node_idx", "next_node_idx": next_index, "success": success, "reset": reset}


def test_a_success_reply_does_not_move_a_followers_next_index_back(tmp_path: pathlib.Path) -> None:
    # pysyncobj 0.3.17 set the next index to what a success reply acknowledged although the entries
    # after it were on the wire already: it sent them again, and the follower cut entries it had
    # applied from its log to take them (CRITICAL "state machine may have diverged"), ~100 times
    # in a 3-node crawl of 8,000 pages (benchmarks/bench_cluster_hostile.py).
    config = ClusterConfig.bootstrap("n1", free_addr(), tmp_path, password="pw")
    node, _ = start_node(config, StateMachine(MemoryStateStore()))
    log = node._log
    try:
        deadline = time.monotonic() + 10
        while not node.is_leader:  # a single voter elects itself
            assert time.monotonic() < deadline, "the node did not become leader"
            log.doTick(0.01)
        follower = TCPNode("127.0.0.1:9")
        log._SyncObj__raftNextIndex[follower] = 111  # entries up to 110 sent
        log._SyncObj__raftMatchIndex[follower] = 95  # ... up to 95 acknowledged

        log._SyncObj__onMessageReceived(follower, reply(101, success=True, reset=False))  # up to 100 taken
        assert log._SyncObj__raftMatchIndex[follower] == 100
        assert log._SyncObj__raftNextIndex[follower] == 111  # 101-110 are on the wire: not sent again

        log._SyncObj__onMessageReceived(follower, reply(90, success=False, reset=True))  # its log ends at 89
        assert log._SyncObj__raftNextIndex[follower] == 90  # a refusal still moves it back
    finally:
        log.destroy()
