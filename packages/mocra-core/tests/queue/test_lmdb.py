"""What only the durable backend does: survive a close, a crash (a real `os._exit`) and a full map, keep
one process per directory, and dead-letter messages it can no longer decode."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from typing import TYPE_CHECKING

import msgspec
import pytest

from mocra_core import ConfigError
from mocra_core.queue import LmdbQueue, MsgpackCodec

if TYPE_CHECKING:
    import pathlib

    from conftest import FakeClock

pytestmark = pytest.mark.anyio

T = "fetch"


class Page(msgspec.Struct, tag="page"):
    url: str
    depth: int = 0


def run_python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


async def test_reopen_keeps_ready_delayed_and_dead_messages(tmp_path: pathlib.Path, clock: FakeClock) -> None:
    path = tmp_path / "q"
    async with LmdbQueue(path, codec=MsgpackCodec(Page), clock=clock, wall_clock=lambda: 1_000.0) as queue:
        await queue.publish(T, [Page("a"), Page("b", 1)])
        await queue.publish(T, [Page("urgent")], priority=5)
        await queue.publish(T, [Page("keyed")], key="site")
        await queue.publish(T, [Page("later")], delay=60)  # due at wall time 1060
        await queue.publish("other", [Page("dead")])
        [dead] = await queue.consume("other", group="g", wait=0)
        await queue.dead_letter(dead, reason="bad page")

    async with LmdbQueue(path, codec=MsgpackCodec(Page), clock=clock, wall_clock=lambda: 1_030.0) as queue:
        assert await queue.pending(T) == 5
        assert await queue.pending("other") == 0
        [letter] = await queue.dead_letters("other")
        assert (letter.payload, letter.reason, letter.failed_at) == (Page("dead"), "bad page", 1_000.0)
        got = await queue.consume(T, group="g", max_messages=10, wait=0)
        assert [(d.payload.url, d.key, d.priority, d.attempt) for d in got] == [  # type: ignore[attr-defined]
            ("urgent", None, 5, 1),
            ("a", None, 0, 1),
            ("b", None, 0, 1),
            ("keyed", "site", 0, 1),
        ]
        clock.advance(29)
        assert await queue.consume(T, group="g", wait=0) == []  # 30 s of its 60 s delay are left
        clock.advance(2)
        [later] = await queue.consume(T, group="g", wait=0)
        assert later.payload == Page("later")
        await queue.ack([*got, later])
        assert await queue.replay("other") == 1

    async with LmdbQueue(path, codec=MsgpackCodec(Page)) as queue:
        assert await queue.pending(T) == 0
        assert await queue.pending("other") == 1
        assert await queue.dead_letters("other") == []


async def test_leases_of_a_closed_queue_come_back_on_reopen(tmp_path: pathlib.Path) -> None:
    async with LmdbQueue(tmp_path, codec=MsgpackCodec()) as queue:
        await queue.publish(T, ["a", "b"])
        [a] = await queue.consume(T, group="g", wait=0)
    async with LmdbQueue(tmp_path, codec=MsgpackCodec()) as queue:
        got = await queue.consume(T, group="g", max_messages=5, wait=0)
        assert [(d.id, d.payload, d.attempt) for d in got] == [(a.id, "a", 2), (got[1].id, "b", 1)]


CRASH = """
    import os, sys, anyio
    from mocra_core.queue import LmdbQueue, MsgpackCodec

    async def main():
        queue = LmdbQueue(sys.argv[1], codec=MsgpackCodec())
        [k1] = await queue.consume("fetch", group="g", wait=0)
        [u] = await queue.consume("fetch", group="g", wait=0)  # k2 is parked behind k1
        print(k1.payload, k1.attempt, u.payload, u.attempt, flush=True)
        os._exit(1)  # no aclose, no flush: as if killed

    anyio.run(main)
"""


async def test_a_lease_held_by_a_process_that_died_is_redelivered(tmp_path: pathlib.Path) -> None:
    async with LmdbQueue(tmp_path, codec=MsgpackCodec()) as queue:
        await queue.publish(T, ["k1", "k2"], key="k")
        await queue.publish(T, ["u"])
    result = run_python(CRASH, str(tmp_path))
    assert result.returncode == 1 and not result.stderr, result.stderr
    assert result.stdout.split() == ["k1", "1", "u", "1"]

    async with LmdbQueue(tmp_path, codec=MsgpackCodec(), max_attempts=2) as queue:
        assert await queue.pending(T) == 3
        got = await queue.consume(T, group="g", max_messages=10, wait=0)
        assert [(d.payload, d.attempt) for d in got] == [("k1", 2), ("u", 2)]  # k2 still waits for k1
        await queue.ack(got)
        [k2] = await queue.consume(T, group="g", max_messages=10, wait=0)
        assert (k2.payload, k2.attempt) == ("k2", 1)
        await queue.ack([k2])
        assert await queue.pending(T) == 0


async def test_a_lease_at_max_attempts_is_dead_lettered_on_reopen(tmp_path: pathlib.Path) -> None:
    async with LmdbQueue(tmp_path, codec=MsgpackCodec(), max_attempts=1) as queue:
        await queue.publish(T, ["x"])
        await queue.consume(T, group="g", wait=0)
    async with LmdbQueue(tmp_path, codec=MsgpackCodec(), max_attempts=1) as queue:
        assert await queue.pending(T) == 0
        [dead] = await queue.dead_letters(T)
        assert (dead.payload, dead.attempt) == ("x", 1)
        assert "process that ended" in dead.reason


LOCKED = """
    import sys
    from mocra_core import ConfigError
    from mocra_core.queue import LmdbQueue, MsgpackCodec

    try:
        LmdbQueue(sys.argv[1], codec=MsgpackCodec())
    except ConfigError as exc:
        print(exc)
    else:
        print("opened")
"""


async def test_a_second_process_cannot_open_the_same_directory(tmp_path: pathlib.Path) -> None:
    async with LmdbQueue(tmp_path, codec=MsgpackCodec()):
        result = run_python(LOCKED, str(tmp_path))
        assert result.returncode == 0, result.stderr
        assert str(tmp_path) in result.stdout
        assert f"in use by process {os.getpid()}" in result.stdout
        with pytest.raises(ConfigError, match="in use by process"):
            LmdbQueue(tmp_path, codec=MsgpackCodec())  # nor a second queue in this process
    result = run_python(LOCKED, str(tmp_path))
    assert result.stdout.strip() == "opened"


async def test_the_map_grows_when_full(tmp_path: pathlib.Path) -> None:
    blob = os.urandom(64 << 10)
    async with LmdbQueue(tmp_path, codec=MsgpackCodec(), map_size=1 << 20) as queue:
        for _ in range(8):
            await queue.publish(T, [blob] * 8)  # 4 MiB in all
        got = await queue.consume(T, group="g", max_messages=100, wait=0)
        assert len(got) == 64 and all(d.payload == blob for d in got)
        await queue.ack(got)
        assert await queue.pending(T) == 0


async def test_undecodable_messages_are_dead_lettered_not_handed_out(tmp_path: pathlib.Path) -> None:
    async with LmdbQueue(tmp_path, codec=MsgpackCodec()) as queue:
        await queue.publish(T, [{"url": 1}, "not a page"])
    async with LmdbQueue(tmp_path, codec=MsgpackCodec(Page)) as queue:
        assert await queue.consume(T, group="g", wait=0) == []  # neither decodes as a Page
        assert await queue.pending(T) == 0
        letters = await queue.dead_letters(T)
        assert len(letters) == 2
        assert all("undecodable payload" in x.reason for x in letters)
        assert letters[0].payload == msgspec.msgpack.encode({"url": 1})  # raw bytes: the codec refused them


async def test_path_that_cannot_be_created(tmp_path: pathlib.Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="cannot create"):
        LmdbQueue(tmp_path / "file" / "q", codec=MsgpackCodec())
