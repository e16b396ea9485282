"""`try_acquire` / `admit`: a domain's slot without waiting, in one process and behind a job-wide gate."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import anyio
import pytest

from mocra_core.download import DomainLimiter, GatedLimiter, LmdbDomainGate, ShareLimiter
from mocra_core.download._permit import Permit

if TYPE_CHECKING:
    import pathlib

pytestmark = pytest.mark.anyio


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def permit(got: Permit | float) -> Permit:
    assert isinstance(got, Permit), got
    return got


async def test_slots_are_granted_up_to_the_concurrency_then_after_a_release() -> None:
    limiter = DomainLimiter(concurrency=2)
    released: list[str] = []
    first, second = (
        permit(limiter.try_acquire("https://a.example/1")),
        permit(limiter.try_acquire("a.example")),
    )
    assert limiter.try_acquire("A.example:8080") == math.inf  # full: ask again after a release
    assert isinstance(limiter.try_acquire("b.example"), Permit)  # another domain is not held up
    first.on_release = lambda p: released.append(p.domain)
    async with first:
        pass
    assert released == ["a.example"]
    again = permit(limiter.try_acquire("a.example"))
    await first.abandon()  # giving back twice does nothing
    assert limiter.state("a.example").active == 2
    for held in (second, again):
        await held.abandon()
    assert limiter.state("a.example").active == 0


async def test_a_spaced_domain_says_when_to_ask_and_an_unused_start_is_given_back() -> None:
    clock = Clock()
    limiter = DomainLimiter(concurrency=4, delay=2.0, clock=clock)
    first = permit(limiter.try_acquire("a.example"))
    assert limiter.try_acquire("a.example") == pytest.approx(2.0)
    await first.abandon()  # the request did not run (robots.txt, a drop): its start is not spent
    second = permit(limiter.try_acquire("a.example"))
    clock.now += 0.5
    async with second:  # used: the next start stays 2 s after it
        pass
    assert limiter.try_acquire("a.example") == pytest.approx(1.5)


async def test_an_abandoned_start_keeps_a_later_reservation() -> None:
    clock = Clock()
    limiter = DomainLimiter(concurrency=4, delay=1.0, clock=clock)
    first = permit(limiter.try_acquire("a.example"))
    clock.now += 1.0
    second = permit(limiter.try_acquire("a.example"))  # reserved the start after it
    await first.abandon()
    assert limiter.try_acquire("a.example") == pytest.approx(1.0)  # the second one's spacing holds
    await second.abandon()


async def test_a_retry_after_block_is_the_wait() -> None:
    clock = Clock()
    limiter = DomainLimiter(concurrency=4, max_backoff=300, clock=clock)
    limiter.feedback("a.example", 429, "300")
    assert limiter.try_acquire("a.example") == pytest.approx(300.0)
    clock.now += 300.0
    assert isinstance(limiter.try_acquire("a.example"), Permit)


async def test_requests_waiting_in_slot_go_first() -> None:
    limiter = DomainLimiter(concurrency=1)
    held = permit(limiter.try_acquire("a.example"))
    entered = anyio.Event()

    async def wait_in_slot() -> None:
        async with limiter.slot("a.example"):
            entered.set()
            await anyio.sleep(0.05)

    async with anyio.create_task_group() as tg:
        tg.start_soon(wait_in_slot)
        await anyio.wait_all_tasks_blocked()
        await held.abandon()  # the slot goes to the waiter, not to the next try
        assert limiter.try_acquire("a.example") == math.inf
        await entered.wait()
    assert isinstance(limiter.try_acquire("a.example"), Permit)


async def test_admit_refuses_a_domain_full_job_wide_without_waiting(tmp_path: pathlib.Path) -> None:
    async with (
        LmdbDomainGate(str(tmp_path / "gates")) as gate,
        GatedLimiter(DomainLimiter(concurrency=1), gate, reuse_for=0) as one,
        GatedLimiter(DomainLimiter(concurrency=1), gate, reuse_for=0) as other,
    ):
        assert one.needs_admit and other.needs_admit
        mine = permit(one.try_acquire("a.example"))
        assert await one.admit(mine) is None and mine.ticket is not None
        theirs = permit(other.try_acquire("a.example"))  # a local slot of the other worker ...
        with anyio.fail_after(1):
            retry = await other.admit(theirs)  # ... but the job-wide one is taken: no wait
        assert retry is not None and 0 < retry <= other.ttl
        assert theirs.done and other.state("a.example").active == 0  # given back
        async with mine:
            pass  # leaves the gate
        theirs = permit(other.try_acquire("a.example"))
        assert await other.admit(theirs) is None
        await theirs.abandon()


async def test_admit_reports_the_start_the_gate_reserved(tmp_path: pathlib.Path) -> None:
    async with (
        LmdbDomainGate(str(tmp_path / "gates")) as gate,
        GatedLimiter(DomainLimiter(concurrency=4, delay=0.5), gate) as one,
        GatedLimiter(DomainLimiter(concurrency=4, delay=0.5), gate) as other,
    ):
        first = permit(one.try_acquire("a.example"))
        assert await one.admit(first) is None and first.wait == 0
        second = permit(other.try_acquire("a.example"))  # its own spacing allows it; the job's does not
        assert await other.admit(second) is None
        assert 0.3 < second.wait <= 0.5
        for held in (first, second):
            await held.abandon()


async def test_share_limiter_admit_reads_the_member_count() -> None:
    async def three() -> int:
        return 3

    limiter = ShareLimiter(DomainLimiter(concurrency=6), three)
    held = permit(limiter.try_acquire("a.example"))
    assert limiter.needs_admit
    await limiter.admit(held)
    assert limiter.local.members == 3
    assert isinstance(limiter.try_acquire("a.example"), Permit)  # a share of 2 slots of 6
    assert limiter.try_acquire("a.example") == math.inf
