"""What only `LmdbCoordination` promises: several OS processes, restarts, crashes, leadership."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import TYPE_CHECKING

import pytest

from mocra_core.coordination import CoordinationError, LmdbCoordination

if TYPE_CHECKING:
    import pathlib

    from conftest import FakeClock

pytestmark = pytest.mark.anyio

RACER = """
import json, os, sys
import anyio
from mocra_core.coordination import LmdbCoordination

async def main(path: str, keys: int, backwards: bool) -> None:
    me = str(os.getpid()).encode()
    async with LmdbCoordination(path) as shared:
        print("ready", flush=True)
        sys.stdin.readline()  # all racers start together
        won = []
        for i in reversed(range(keys)) if backwards else range(keys):
            if await shared.set_if_absent(f"k{i}", me):
                won.append(i)
            await shared.incr("total")
            await shared.append("log", me)
    print(json.dumps({"pid": os.getpid(), "won": won}), flush=True)

anyio.run(main, sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1")
"""

CRASHER = """
import os, sys
import anyio
from mocra_core.coordination import LmdbCoordination

async def main(path: str) -> None:
    shared = LmdbCoordination(path, holder_id="crasher")
    token = await shared.acquire_lock("login/alice", "crasher", ttl=5)
    leads = await shared.is_leader()
    await shared.set("last-words", b"bye", ttl=5)
    print(token, leads, flush=True)
    os._exit(0)  # no aclose, no flush: as if killed

anyio.run(main, sys.argv[1])
"""


def _spawn(script: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
async def test_processes_racing_set_if_absent_have_one_winner_per_key(tmp_path: pathlib.Path) -> None:
    keys, path = 1_500, str(tmp_path / "shared")
    racers = [_spawn(RACER, path, str(keys), str(i)) for i in range(2)]  # one forwards, one backwards
    try:
        for racer in racers:
            assert racer.stdout is not None and racer.stdout.readline() == "ready\n"
        for racer in racers:
            assert racer.stdin is not None
            racer.stdin.write("go\n")
            racer.stdin.flush()
        results = [json.loads(racer.communicate(timeout=60)[0]) for racer in racers]
    finally:
        for racer in racers:
            racer.kill()
            racer.wait()
    assert [racer.returncode for racer in racers] == [0, 0]
    wins = {result["pid"]: set(result["won"]) for result in results}
    a, b = wins.values()
    assert not a & b and a | b == set(range(keys))  # every key won exactly once
    async with LmdbCoordination(path) as shared:
        for pid, won in wins.items():
            for i in list(won)[:50]:
                assert await shared.get(f"k{i}") == str(pid).encode()
        assert await shared.get("total") == str(2 * keys).encode()  # no increment lost
        log = await shared.items("log")
        assert len(log) == 2 * keys and {entry.decode() for entry in log} == {str(pid) for pid in wins}


@pytest.mark.slow
async def test_a_lock_of_a_killed_process_expires(tmp_path: pathlib.Path, clock: FakeClock) -> None:
    path = str(tmp_path / "shared")
    crasher = _spawn(CRASHER, path)
    out, _ = crasher.communicate(timeout=60)
    assert crasher.returncode == 0
    token, leads = out.split()
    assert leads == "True"

    clock.set(__import__("time").time())  # the crasher's clock was the wall clock
    async with LmdbCoordination(path, clock=clock, leader_ttl=10) as shared:
        assert await shared.get("last-words") == b"bye"  # committed before the crash
        assert await shared.acquire_lock("login/alice", "survivor", ttl=5) is None
        holder = await shared.lock_holder("login/alice")
        assert holder is not None and (holder.holder, holder.token) == ("crasher", int(token))
        assert not await shared.is_leader()  # the crasher's leader lease is still live
        clock.advance(5.5)
        assert await shared.get("last-words") is None
        taken = await shared.acquire_lock("login/alice", "survivor", ttl=5)
        assert taken is not None and taken > int(token)
        assert not await shared.is_leader()
        clock.advance(5)  # 10.5 s: the leader lease (10 s) has lapsed
        assert await shared.is_leader()


async def test_tokens_keep_increasing_across_reopens(tmp_path: pathlib.Path, clock: FakeClock) -> None:
    tokens = []
    for name in ("a", "b", "a", "c"):
        async with LmdbCoordination(tmp_path, clock=clock) as shared:
            token = await shared.acquire_lock(name, "x", ttl=1)
            assert token is not None
            tokens.append(token)
            assert await shared.is_leader()  # takes a token too
        clock.advance(2)
    assert tokens == sorted(set(tokens)) and tokens[0] == 1
    assert tokens[-1] > len(tokens)  # the leader leases used tokens in between


async def test_data_survives_a_reopen(tmp_path: pathlib.Path, clock: FakeClock) -> None:
    async with LmdbCoordination(tmp_path, clock=clock) as shared:
        await shared.set("v", b"1")
        await shared.set("t", b"2", ttl=10)
        await shared.append("l", b"x")
        await shared.incr("n", 5)
        token = await shared.acquire_lock("lock", "me", ttl=10)
    async with LmdbCoordination(tmp_path, clock=clock) as shared:
        assert await shared.get("v") == b"1" and await shared.get("t") == b"2"
        assert await shared.items("l") == [b"x"] and await shared.incr("n") == 6
        assert token is not None and await shared.renew_lock("lock", "me", token, ttl=10)
        clock.advance(10)
        assert await shared.get("t") is None


async def test_instances_in_one_process_share_the_environment(tmp_path: pathlib.Path) -> None:
    one = LmdbCoordination(tmp_path, holder_id="one")
    two = LmdbCoordination(tmp_path / "." / "", holder_id="two")  # the same directory, spelt differently
    async with one, two:
        assert one.path == two.path
        await one.set("k", b"v")
        assert await two.get("k") == b"v"
        assert await one.is_leader() and await one.is_leader()
        assert not await two.is_leader()
        await one.aclose()  # gives leadership up; the environment stays open for `two`
        assert await two.is_leader()
        assert await two.get("k") == b"v"
        with pytest.raises(CoordinationError, match="closed"):
            await one.get("k")


async def test_the_leader_lease_is_renewed_by_calls(tmp_path: pathlib.Path, clock: FakeClock) -> None:
    async with (
        LmdbCoordination(tmp_path, clock=clock, holder_id="a", leader_ttl=10) as a,
        LmdbCoordination(tmp_path, clock=clock, holder_id="b", leader_ttl=10) as b,
    ):
        assert await a.is_leader()
        for _ in range(5):  # 30 s, calling every 6 s: a stays leader
            clock.advance(6)
            assert await a.is_leader() and not await b.is_leader()
        clock.advance(9)  # a stopped calling, but its lease is not over yet
        assert not await b.is_leader()
        clock.advance(1)
        assert await b.is_leader() and not await a.is_leader()


def test_a_directory_that_cannot_be_opened_is_reported(tmp_path: pathlib.Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(CoordinationError, match="cannot open"):
        LmdbCoordination(blocker)
