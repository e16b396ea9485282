"""ShareLimiter: each node of a cluster keeps to its share of per-domain limits (fake clock, fake members)."""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import TYPE_CHECKING

import anyio
import anyio.abc
import anyio.lowlevel
import pytest

from mocra_core.download import DomainLimiter, ShareLimiter

if TYPE_CHECKING:
    from conftest import FakeClock

pytestmark = pytest.mark.anyio


class Members:
    """A member count the test changes; counts reads, and fails on demand."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.reads = 0
        self.fail = False

    async def __call__(self) -> int:
        self.reads += 1
        if self.fail:
            raise ConnectionError("control plane unreachable")
        return self.count


async def occupy(limiter: ShareLimiter, n: int, stack: AsyncExitStack) -> None:
    for _ in range(n):
        await stack.enter_async_context(limiter.slot("https://shop.example/a"))


async def waits(limiter: ShareLimiter, tg: anyio.abc.TaskGroup) -> anyio.Event:
    entered = anyio.Event()

    async def one() -> None:
        async with limiter.slot("https://shop.example/b"):
            entered.set()

    tg.start_soon(one)
    await anyio.wait_all_tasks_blocked()
    return entered


async def test_two_members_get_half_the_concurrency_each(clock: FakeClock) -> None:
    members = Members(2)
    limiter = ShareLimiter(DomainLimiter(concurrency=4), members, clock=clock)
    async with AsyncExitStack() as stack, anyio.create_task_group() as tg:
        await occupy(limiter, 2, stack)
        third = await waits(limiter, tg)
        assert not third.is_set()  # 2 of 4 in flight: this node's share is full
        assert limiter.state("shop.example").concurrency == 4  # state speaks of the job-wide limit

        members.count = 1  # the other member left; noticed at the next read
        clock.now += limiter.interval
        await occupy(limiter, 1, stack)
        await anyio.wait_all_tasks_blocked()
        assert third.is_set()
        assert limiter.local.members == 1
    assert members.reads == 2


async def test_concurrency_share_rounds_up(clock: FakeClock) -> None:
    limiter = ShareLimiter(DomainLimiter(concurrency=5), Members(2), clock=clock)
    async with AsyncExitStack() as stack, anyio.create_task_group() as tg:
        await occupy(limiter, 3, stack)  # ceil(5 / 2)
        assert not (await waits(limiter, tg)).is_set()
        tg.cancel_scope.cancel()


async def test_the_delay_is_multiplied_by_the_member_count(clock: FakeClock) -> None:
    local = DomainLimiter(concurrency=8, delay=0.5, clock=clock, sleep=clock.sleep)
    limiter = ShareLimiter(local, Members(3), clock=clock)
    for _ in range(3):
        async with limiter.slot("https://shop.example/a"):
            pass
    assert clock.slept == [1.5, 1.5]  # starts 0, 1.5, 3.0 on this node: 0.5 s apart for the job


async def test_the_member_count_is_read_at_most_once_per_interval(clock: FakeClock) -> None:
    members = Members(2)
    limiter = ShareLimiter(DomainLimiter(concurrency=8), members, interval=5.0, clock=clock)
    for _ in range(10):
        async with limiter.slot("https://shop.example/a"):
            clock.now += 0.4
    assert members.reads == 1
    clock.now += 1.0
    async with limiter.slot("https://shop.example/a"):
        pass
    assert members.reads == 2


async def test_a_failed_read_keeps_the_last_share(clock: FakeClock, caplog: pytest.LogCaptureFixture) -> None:
    members = Members(4)
    limiter = ShareLimiter(DomainLimiter(concurrency=8), members, clock=clock)
    assert await limiter.refresh_now() == 4
    members.fail = True
    clock.now += limiter.interval
    async with limiter.slot("https://shop.example/a"):
        pass
    assert limiter.local.members == 4
    assert "could not read the member count" in caplog.text


def test_nonsense_is_rejected() -> None:
    with pytest.raises(ValueError, match="interval"):
        ShareLimiter(DomainLimiter(), Members(1), interval=0)
    with pytest.raises(ValueError, match="members"):
        DomainLimiter().share(0)
