"""A replay from the DLQ keeps the fence rising: a claim that outlived the trip through the DLQ is stale.

Replay starts the attempts at 1 again (retries and back-off afresh); the attempts used before go to
`Delivery.prior_attempts`, and the fencing token is their sum. On every backend (`open_backend`).
"""

from __future__ import annotations

import pathlib
from typing import TYPE_CHECKING

import anyio
import pytest

from mocra_core.backends.lmdb._queue_store import LmdbStore
from mocra_core.queue import Delivery, Fence, LmdbQueue, MsgpackCodec
from mocra_core.sinks import SqlSink

if TYPE_CHECKING:
    from collections.abc import Callable

    from mocra_core.queue import QueueBackend

    OpenBackend = Callable[..., QueueBackend]  # the `open_backend` fixture of conftest.py

pytestmark = pytest.mark.anyio

T = "fetch"


async def take(queue: QueueBackend) -> Delivery:
    with anyio.fail_after(20):
        while True:
            found = await queue.consume(T, group="g", max_messages=1, wait=1.0)
            if found:
                return found[0]


async def test_a_replayed_message_goes_on_from_the_attempts_it_had(open_backend: OpenBackend) -> None:
    async with open_backend(visibility_timeout=30, max_attempts=5) as queue:
        await queue.publish(T, ["x"])
        first = await take(queue)
        await queue.nack(first)
        second = await take(queue)
        await queue.dead_letter(second, reason="bad")
        [letter] = await queue.dead_letters(T)
        assert letter.attempt == 2
        assert await queue.replay(T) == 1
        replayed = await take(queue)
        assert (replayed.id, replayed.attempt, replayed.prior_attempts) == (first.id, 1, 2)
        assert Fence.of(replayed).token == 3
        assert Fence.of(second).stale_against(Fence.of(replayed))
        await queue.nack(replayed)  # its retries start afresh: a nack is a second attempt, not a burial
        again = await take(queue)
        assert (again.attempt, again.prior_attempts, Fence.of(again).token) == (2, 2, 4)
        await queue.dead_letter(again, reason="bad again")
        assert await queue.replay(T) == 1
        third_life = await take(queue)
        assert (third_life.attempt, third_life.prior_attempts, Fence.of(third_life).token) == (1, 4, 5)
        await queue.ack([third_life])
        assert await queue.pending(T) == 0


async def test_a_stale_claim_cannot_overwrite_the_replayed_ones_row(
    open_backend: OpenBackend, tmp_path: pathlib.Path
) -> None:
    """A worker still holding the first lease writes after its message went to the DLQ and came back."""
    async with open_backend(visibility_timeout=30, max_attempts=5) as queue:
        await queue.publish(T, [{"url": "/a"}])
        stale = await take(queue)  # this worker pauses; meanwhile the message lives on without it
        await queue.nack(stale)  # (as when its lease expires)
        newer = await take(queue)
        await queue.dead_letter(newer, reason="bad")
        await queue.replay(T)
        replayed = await take(queue)
        async with SqlSink(f"sqlite:///{tmp_path / 'items.db'}", table="items", key="url") as sink:
            assert await sink.write_fenced([{"url": "/a", "by": "replayed"}], [Fence.of(replayed)]) == 0
            assert await sink.write_fenced([{"url": "/a", "by": "stale"}], [Fence.of(stale)]) == 1
        await queue.ack([replayed])


async def test_lmdb_keeps_the_prior_attempts_across_a_restart(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "queue"
    async with LmdbQueue(path, codec=MsgpackCodec(), max_attempts=5) as queue:
        await queue.publish(T, ["x"])
        await queue.dead_letter(await take(queue), reason="bad")
        await queue.replay(T)
    async with LmdbQueue(path, codec=MsgpackCodec(), max_attempts=5) as queue:
        replayed = await take(queue)
        assert (replayed.attempt, replayed.prior_attempts) == (1, 1)
        await queue.ack([replayed])
    store = LmdbStore(str(path), map_size=1 << 20)
    with store.env.begin() as txn:
        assert txn.stat(store.prior)["entries"] == 0  # the ack dropped it with the message
    store.close()


def test_a_queue_directory_of_an_earlier_version_opens_read_only(tmp_path: pathlib.Path) -> None:
    """Written before `prior` existed: a reader beside its (old) writer opens it without that database."""
    path = str(tmp_path / "queue")
    store = LmdbStore(path, map_size=1 << 20)
    with store.env.begin(write=True) as txn:
        txn.drop(store.prior, delete=True)
    store.close()
    reader = LmdbStore(path, map_size=1 << 20, readonly=True)
    assert reader.dead_letters(b"fetch\0", 10) == []
    reader.close()
    writer = LmdbStore(path, map_size=1 << 20)  # this version's writer adds it
    with writer.env.begin() as txn:
        assert txn.stat(writer.prior)["entries"] == 0
    writer.close()
