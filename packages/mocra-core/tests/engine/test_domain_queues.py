"""`DomainQueues`: round-robin over the domains that can start a request, priority within one, bounds."""

from __future__ import annotations

import math

import pytest

from mocra_core.download import DomainLimiter
from mocra_core.download._permit import Permit
from mocra_core.engine.download._domain_queues import DomainQueues, Parked
from mocra_core.queue import Delivery

pytestmark = pytest.mark.anyio


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def entry(name: str, *, priority: int = 0, attempt: int = 1) -> Parked[str]:
    domain = name.partition("/")[0]
    return Parked(Delivery(name, "request", name, None, priority, attempt, 0.0), domain, name)


def lot(limiter: DomainLimiter, clock: Clock, **bounds: float) -> DomainQueues[str]:
    settings = {"total_cap": 64, "domain_cap": 32, "horizon": 10.0, "max_park": 60.0} | bounds
    return DomainQueues(
        limiter,
        total_cap=int(settings["total_cap"]),
        domain_cap=int(settings["domain_cap"]),
        horizon=settings["horizon"],
        max_park=settings["max_park"],
        clock=clock,
    )


async def test_a_free_domain_starts_at_once_and_a_full_one_parks() -> None:
    clock = Clock()
    limiter = DomainLimiter(concurrency=1, clock=clock)
    queues = lot(limiter, clock)
    first = queues.offer(entry("a/0"))
    assert isinstance(first, Permit) and queues.fruitful
    assert queues.offer(entry("a/1")) is None and queues.parked == 1
    assert queues.take() is None  # full: nothing to take
    first.acquired = clock.now
    first.on_release = lambda permit: woken.append(queues.released(permit))
    woken: list[bool] = []
    await first.abandon()
    assert woken == [True]  # a slot given back makes the domain ready
    taken = queues.take()
    assert taken is not None and taken[0].prepared == "a/1"


async def test_domains_take_turns_and_priority_goes_first_within_one() -> None:
    clock = Clock()
    limiter = DomainLimiter(concurrency=1, clock=clock)
    queues = lot(limiter, clock)
    held = [queues.offer(entry("a/0")), queues.offer(entry("b/0"))]
    for name, priority in (("a/1", 0), ("a/2", 5), ("b/1", 0), ("b/2", 0)):
        assert queues.offer(entry(name, priority=priority)) is None
    for permit in held:
        assert isinstance(permit, Permit)
        permit.on_release = queues.released
        await permit.abandon()
    order = []
    while (taken := queues.take()) is not None:
        order.append(taken[0].prepared)
        await taken[1].abandon()
        taken[1].on_release = None
        queues.released(taken[1])
    assert order[:2] == ["a/2", "b/1"]  # one of each domain in turn; a's higher priority first


async def test_a_spaced_domain_is_timed_and_comes_due() -> None:
    clock = Clock()
    limiter = DomainLimiter(concurrency=4, delay=2.0, clock=clock)
    queues = lot(limiter, clock)
    deadlines: list[float] = []
    queues.on_timer = deadlines.append
    assert isinstance(queues.offer(entry("a/0")), Permit)
    assert queues.offer(entry("a/1")) is None
    assert deadlines == [102.0] and queues.next_deadline() == 102.0
    assert queues.due() == 0 and queues.take() is None
    clock.now = 102.0
    assert queues.due() == 1
    taken = queues.take()
    assert taken is not None and taken[0].prepared == "a/1"


async def test_past_the_domain_cap_first_attempts_go_back_but_retried_ones_stay() -> None:
    clock = Clock()
    limiter = DomainLimiter(concurrency=1, clock=clock)
    queues = lot(limiter, clock, domain_cap=4)
    assert isinstance(queues.offer(entry("a/0")), Permit)
    for n in range(1, 5):
        assert queues.offer(entry(f"a/{n}")) is None
    assert queues.parked == 4 and not queues.returns
    assert queues.offer(entry("a/5")) is None
    assert [(e.prepared, reason) for e, _, reason in queues.returns] == [("a/5", "domain busy")]
    assert queues.returns[0][1] > 0  # with a delay: when the domain is expected to take it
    assert queues.offer(entry("a/6", attempt=2)) is None  # a retried one is not sent back for the cap
    assert queues.parked == 5 and len(queues.returns) == 1


async def test_a_block_past_the_horizon_sends_the_domain_back_with_its_delay() -> None:
    clock = Clock()
    limiter = DomainLimiter(concurrency=1, max_backoff=300, clock=clock)
    queues = lot(limiter, clock)
    first = queues.offer(entry("a/0"))
    assert isinstance(first, Permit)
    first.on_release = queues.released
    assert queues.offer(entry("a/1")) is None
    limiter.feedback("a", 429, "300")  # its response: `Retry-After: 300`
    await first.abandon()
    assert queues.take() is None  # asked again: blocked for 300 s, past the 10 s horizon
    assert [(e.prepared, reason) for e, _, reason in queues.returns] == [("a/1", "domain blocked")]
    assert queues.returns[0][1] == pytest.approx(300.0)
    assert queues.offer(entry("a/2")) is None  # what comes meanwhile goes back too, no limiter asked
    assert queues.returns[-1][0].prepared == "a/2" and queues.returns[-1][1] >= 300.0
    assert queues.parked == 0
    clock.now += 300
    assert isinstance(queues.offer(entry("a/3")), Permit)  # the block is over


async def test_requests_parked_too_long_go_back() -> None:
    clock = Clock()
    limiter = DomainLimiter(concurrency=1, clock=clock)
    queues = lot(limiter, clock, max_park=30.0)
    assert isinstance(queues.offer(entry("a/0")), Permit)
    assert queues.offer(entry("a/1")) is None
    clock.now += 31
    queues.sweep()
    assert [(e.prepared, reason) for e, _, reason in queues.returns] == [("a/1", "parked too long")]
    assert queues.parked == 0
    entries, permits = queues.drain()
    assert entries == [] and permits == [] and math.isinf(queues.next_deadline())


async def test_requests_refused_by_a_full_gate_wait_their_turn_again() -> None:
    clock = Clock()
    limiter = DomainLimiter(concurrency=4, clock=clock)
    queues = lot(limiter, clock)
    deadlines: list[float] = []
    queues.on_timer = deadlines.append
    entries = [entry(name) for name in ("a/0", "a/1", "a/2")]
    permits = [queues.offer(each) for each in entries]  # each granted here, then refused job-wide
    for each, permit in zip(entries, permits, strict=True):
        assert isinstance(permit, Permit)
        await permit.abandon()  # (admit gives the permit back)
        queues.refused(each, 5.0)
    assert queues.parked == 3 and deadlines[-1] - clock.now <= 0.05  # polled soon, not in 5 s
    clock.now = deadlines[-1]
    assert queues.due() == 1
    order = []
    while (taken := queues.take()) is not None:
        order.append(taken[0].prepared)
        await taken[1].abandon()
    assert order == ["a/0", "a/1", "a/2"]
