"""`LmdbQueueReader`: reads a queue directory while another process uses it, and changes nothing."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import TYPE_CHECKING

import anyio
import pytest

from mocra_core import ConfigError
from mocra_core.backends.lmdb._queue_reader import LmdbQueueReader
from mocra_core.queue import LmdbQueue, MsgpackCodec

if TYPE_CHECKING:
    import pathlib

    from mocra_core.queue import DeadLetter

HOLDER = """
import sys, anyio
from mocra_core.queue import LmdbQueue, MsgpackCodec

async def main(path):
    async with LmdbQueue(path, codec=MsgpackCodec()) as queue:
        await queue.publish("fetch", ["a", "b", "c"])
        first, second = await queue.consume("fetch", group="g", max_messages=2)
        await queue.dead_letter(first, reason="HTTP 500")
        print(first.id, flush=True)
        sys.stdin.readline()  # holding `second`'s lease until told
        await queue.ack([second])

anyio.run(main, sys.argv[1])
"""


def test_reads_dead_letters_and_pending_while_another_process_uses_the_queue(tmp_path: pathlib.Path) -> None:
    async def read() -> tuple[list[DeadLetter], int, int, list[DeadLetter]]:
        async with LmdbQueueReader(tmp_path, codec=MsgpackCodec()) as reader:
            return (
                list(await reader.dead_letters("fetch")),
                await reader.pending("fetch"),  # the leased one counts
                await reader.pending("parse"),
                list(await reader.dead_letters("parse")),
            )

    async def pending_after() -> int:
        async with LmdbQueue(tmp_path, codec=MsgpackCodec()) as queue:
            return await queue.pending("fetch")

    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(HOLDER), str(tmp_path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert holder.stdout is not None
    dead_id = holder.stdout.readline().strip()
    try:
        letters, pending, other_pending, other_letters = anyio.run(read)
    finally:
        holder.communicate("\n", timeout=30)
    assert holder.returncode == 0

    [letter] = letters
    assert (letter.id, letter.payload, letter.reason) == (dead_id, "a", "HTTP 500")
    assert pending == 2
    assert (other_pending, other_letters) == (0, [])
    assert anyio.run(pending_after) == 1  # the holder's lease and ack were its own


def test_a_directory_without_a_queue_is_named(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ConfigError, match=r"queue\.path: cannot read a queue in .*nothing"):
        LmdbQueueReader(tmp_path / "nothing", codec=MsgpackCodec())
