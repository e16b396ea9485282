"""An LMDB queue's file does not stay in the process's RSS once written and read (Linux)."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import anyio.to_thread
import pytest

from mocra_core.backends.lmdb import _resident
from mocra_core.queue import LmdbQueue, MsgpackCodec

if TYPE_CHECKING:
    import pathlib

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/smaps"),
]


def mapped_kib(data: str) -> tuple[int, int]:
    """KiB of the file `data`, and KiB of it resident in this process's mappings (`Rss:` in smaps)."""
    total, inside = 0, False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            first = line.split(" ", 1)[0]
            if "-" in first and ":" not in first:  # a mapping's header line
                inside = line.rstrip("\n").endswith(data)
            elif inside and line.startswith("Rss:"):
                total += int(line.split()[1])
    return os.path.getsize(data) // 1024, total


async def test_a_drained_queue_does_not_keep_its_file_resident(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_resident, "_TRIM_EVERY", 8)  # 256 in use; 8 keeps the test small
    data = os.path.join(os.path.realpath(tmp_path), "queue", "data.mdb")  # noqa: ASYNC240 - no I/O here
    blob = "x" * 2000
    async with LmdbQueue(tmp_path / "queue", codec=MsgpackCodec()) as queue:
        for _ in range(40):
            await queue.publish("fetch", [blob] * 250)  # 20 MB in all
        drained = 0
        while got := await queue.consume("fetch", group="g", max_messages=250, wait=0):
            await queue.ack(got)
            drained += len(got)
        assert drained == 10_000
        size_kib, resident_kib = await anyio.to_thread.run_sync(mapped_kib, data)
        assert size_kib > 20_000
        assert resident_kib < size_kib // 4  # before the trims: the whole file (every page read)
