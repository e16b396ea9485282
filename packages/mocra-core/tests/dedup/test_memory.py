from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from mocra_core.dedup import MemorySeenSet


def fp(n: int) -> bytes:
    return n.to_bytes(8, "little") + b"\xff" * 8


@pytest.mark.anyio
async def test_a_cancelled_growth_adds_nothing() -> None:
    seen = MemorySeenSet()
    await seen.add_if_absent([fp(n) for n in range(1, 100)])
    batch = [fp(n) for n in range(100, 5_000)]  # needs a bigger table: growing checkpoints
    with anyio.CancelScope() as scope:
        scope.cancel()
        await seen.add_if_absent(batch)
    assert scope.cancelled_caught
    assert await seen.count() == 99
    assert not await seen.contains(fp(100))
    assert await seen.add_if_absent(batch) == [True] * len(batch)
    assert await seen.contains(fp(1))


@pytest.mark.anyio
async def test_fingerprints_sharing_64_bits_count_as_one() -> None:
    seen = MemorySeenSet()
    a, b = b"12345678" + b"a" * 8, b"12345678" + b"b" * 8
    assert await seen.add_if_absent([a, b]) == [True, False]  # the documented collision
    assert await seen.contains(b"12345678" + b"c" * 8)


@pytest.mark.anyio
async def test_linear_probing_with_colliding_slots() -> None:
    seen = MemorySeenSet()
    same_slot = [fp(n << 20) for n in range(1, 50)]  # equal low bits: one probe chain
    assert await seen.add_if_absent(same_slot) == [True] * 49
    assert await seen.add_if_absent(same_slot[::-1]) == [False] * 49
    assert not await seen.contains(fp(50 << 20))


@pytest.mark.anyio
async def test_aclose_empties_and_can_be_reused() -> None:
    async with MemorySeenSet() as seen:
        await seen.add_if_absent([fp(1)])
    assert await seen.count() == 0
    assert await seen.add_if_absent([fp(1)]) == [True]


@pytest.mark.anyio
async def test_adders_wait_only_for_a_growth_not_for_each_other() -> None:
    # 20 tasks adding side by side across growths: a lock taken per batch would be passed from one
    # waiting task to the next for ever after the first growth (a task wake-up per batch)
    seen = MemorySeenSet()
    passes = 0
    done = anyio.Event()

    async def ticker() -> None:
        nonlocal passes
        while not done.is_set():
            passes += 1
            await anyio.lowlevel.checkpoint()

    async def adder(k: int) -> None:
        for n in range(100):
            await seen.add_if_absent([fp(1 + k * 1_000 + n * 3 + i) for i in range(3)])

    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        async with anyio.create_task_group() as adders:
            for k in range(20):
                adders.start_soon(adder, k)
        done.set()
    assert await seen.count() == 20 * 100 * 3
    assert passes < 50, passes  # a pass of the loop per growth chunk, not one per batch
