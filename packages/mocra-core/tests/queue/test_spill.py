"""`SpillingQueue` past its threshold: FIFO across memory and disk, nothing lost, memory bounded."""

from __future__ import annotations

import pathlib

import pytest

from mocra_core.queue import MsgpackCodec, SpillingQueue

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_overflow_goes_to_disk_and_comes_back_in_order(tmp_path: pathlib.Path) -> None:
    async with SpillingQueue(
        codec=MsgpackCodec(), topics={"request"}, threshold=10, directory=str(tmp_path)
    ) as q:
        for n in range(0, 100, 7):
            await q.publish("request", [{"n": k} for k in range(n, min(n + 7, 100))])
        await q.publish("other", [{"n": k} for k in range(50)])  # not a spilled topic

        assert q.spilled == 90
        assert await q.pending("request") == 100
        got = []
        while deliveries := await q.consume("request", group="g", max_messages=8, wait=0):
            got.extend(d.payload["n"] for d in deliveries)  # type: ignore[index]
            await q.ack(deliveries)
        assert got == list(range(100))
        assert await q.pending("request") == 0
        assert await q.pending("other") == 50


async def test_once_spilling_new_messages_queue_behind_the_disk(tmp_path: pathlib.Path) -> None:
    async with SpillingQueue(codec=MsgpackCodec(), topics={"t"}, threshold=2, directory=str(tmp_path)) as q:
        await q.publish("t", [1, 2, 3, 4])
        [first] = await q.consume("t", group="g", wait=0)
        await q.ack([first])  # memory has room again, but the disk still holds older messages
        await q.publish("t", [5])
        order = [first.payload]
        while deliveries := await q.consume("t", group="g", wait=0):
            order.extend(d.payload for d in deliveries)
            await q.ack(deliveries)
        assert order == [1, 2, 3, 4, 5]


async def test_nack_and_dead_letter_go_back_to_the_part_they_came_from(tmp_path: pathlib.Path) -> None:
    async with SpillingQueue(
        codec=MsgpackCodec(), topics={"t"}, threshold=1, directory=str(tmp_path), max_attempts=2
    ) as q:
        await q.publish("t", ["memory", "disk"])
        in_memory, on_disk = [(await q.consume("t", group="g", wait=0))[0] for _ in range(2)]
        await q.nack(in_memory, delay=0, reason="again")
        await q.dead_letter(on_disk, reason="broken")
        [again] = await q.consume("t", group="g", wait=0)
        assert (again.payload, again.attempt) == ("memory", 2)
        await q.ack([again])
        [letter] = await q.dead_letters("t")
        assert (letter.payload, letter.reason) == ("disk", "broken")
        assert await q.replay("t") == 1
        [back] = await q.consume("t", group="g", wait=0)
        assert back.payload == "disk"
        await q.ack([back])
        assert await q.pending("t") == 0


async def test_consume_waits_for_messages_on_disk(tmp_path: pathlib.Path) -> None:
    async with SpillingQueue(codec=MsgpackCodec(), topics={"t"}, threshold=1, directory=str(tmp_path)) as q:
        await q.publish("t", ["a", "b"])
        [a] = await q.consume("t", group="g", wait=0)
        [b] = await q.consume("t", group="g", wait=1)
        assert (a.payload, b.payload) == ("a", "b")
        assert await q.consume("t", group="g", wait=0.1) == []


async def test_the_two_parts_never_share_an_id_and_each_delivery_returns_to_its_part(
    tmp_path: pathlib.Path,
) -> None:
    from mocra_core.queue import Fence

    async with SpillingQueue(codec=MsgpackCodec(), topics={"t"}, threshold=2, directory=str(tmp_path)) as q:
        await q.publish("t", ["m1", "m2", "d1", "d2"])  # two in memory, two on disk
        held = list(await q.consume("t", group="g", max_messages=4, wait=0))
        held += await q.consume("t", group="g", max_messages=4, wait=0)
        assert [d.payload for d in held] == ["m1", "m2", "d1", "d2"]
        ids = [d.id for d in held]
        assert len(set(ids)) == 4, ids  # each part numbers from 1: the disk's are prefixed
        assert len({Fence.of(d).claim for d in held}) == 4
        await q.dead_letter(held[0], reason="memory one")
        await q.dead_letter(held[2], reason="disk one")
        await q.ack([held[1], held[3]])
        assert await q.pending("t") == 0  # every ack reached its own part
        letters = {letter.payload: letter.id for letter in await q.dead_letters("t")}
        assert set(letters) == {"m1", "d1"} and letters["d1"].startswith("s:")
        assert await q.replay("t", [letters["d1"]]) == 1  # only the disk one, not a memory id alike
        (back,) = await q.consume("t", group="g", max_messages=4, wait=0)
        assert back.payload == "d1"
        assert [letter.payload for letter in await q.dead_letters("t")] == ["m1"]
