"""`DomainFeeder`: a busy, spaced, blocked or job-wide full domain parks its own requests, never a worker.

The steps stand in for the download stage (the crawls through the engine are in `test_head_of_line.py`):
`prepare` reads the domain from the payload `"domain/n"`, `fetch` notes it and acks.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import anyio
import pytest

from mocra_core.download import DomainLimiter, GatedLimiter, LmdbDomainGate
from mocra_core.engine.download._domain_feeder import DomainFeeder, DownloadSteps
from mocra_core.queue import Delivery, MemoryQueue

if TYPE_CHECKING:
    import pathlib
    from collections.abc import Callable

    from mocra_core.download._permit import DomainAdmission, Permit

pytestmark = pytest.mark.anyio


class Steps:
    """Fetches by acking; `stop_when` ends the run; `hold` keeps a domain's downloads running until set."""

    def __init__(self, queue: MemoryQueue, stop_when: Callable[[list[str]], bool]) -> None:
        self.queue = queue
        self.fetched: list[str] = []
        self.handed_back: list[tuple[str, float]] = []
        self.stop_when = stop_when
        self.feeder: DomainFeeder[str] | None = None
        self.hold: dict[str, anyio.Event] = {}
        self._fetched_more = anyio.Event()

    async def until(self, done: Callable[[list[str]], bool]) -> None:
        """Wait until `done(fetched)` holds."""
        while not done(self.fetched):
            self._fetched_more = anyio.Event()
            await self._fetched_more.wait()

    async def prepare(self, delivery: Delivery) -> tuple[str, str]:
        payload = str(delivery.payload)
        return payload.partition("/")[0], payload

    async def fetch(self, delivery: Delivery, payload: str, permit: Permit) -> None:
        async with permit:
            domain = payload.partition("/")[0]
            if domain in self.hold:
                await self.hold[domain].wait()
            self.fetched.append(payload)
            self._fetched_more.set()
        await self.queue.ack([delivery])
        if self.stop_when(self.fetched):
            assert self.feeder is not None
            self.feeder.stop()

    async def hand_back(self, delivery: Delivery, delay: float, reason: str) -> None:
        self.handed_back.append((str(delivery.payload), delay))
        await self.queue.nack(delivery, delay=delay, reason=reason)

    async def failed(self, delivery: Delivery, exc: Exception) -> None:
        raise AssertionError(f"unexpected failure: {exc!r}")

    def steps(self) -> DownloadSteps[str]:
        return DownloadSteps(self.prepare, self.fetch, self.hand_back, self.failed)


async def left_in(queue: MemoryQueue) -> list[Delivery]:
    """Everything still in the queue (delayed ones included, once due)."""
    left: list[Delivery] = []
    pending = await queue.pending("t")
    with anyio.fail_after(5):
        while len(left) < pending:
            left += await queue.consume("t", group="g", max_messages=100, wait=1)
    return left


async def run(queue: MemoryQueue, limiter: DomainAdmission, steps: Steps, workers: int) -> None:
    feeder = steps.feeder = DomainFeeder(queue, "t", "g", limiter, wait=0.01, visibility_timeout=60)
    with anyio.fail_after(10):
        await feeder.run(workers, steps.steps())


async def test_a_full_domain_queued_first_does_not_hold_the_workers() -> None:
    async with MemoryQueue() as queue:
        await queue.publish("t", [f"slow/{n}" for n in range(20)] + [f"fast/{n}" for n in range(30)])
        steps = Steps(queue, lambda done: sum(p.startswith("fast") for p in done) == 30)
        steps.hold["slow"] = anyio.Event()  # the slow domain's downloads never end (until released)
        limiter = DomainLimiter(concurrency=2)
        async with anyio.create_task_group() as tg:
            tg.start_soon(run, queue, limiter, steps, 4)
            with anyio.fail_after(5):  # two workers hold the slow domain's slots, two crawl the other
                await steps.until(lambda done: sum(p.startswith("fast") for p in done) == 30)
            steps.hold["slow"].set()
        # nothing lost: the slow domain's requests were fetched or are back in the queue, first attempt
        fetched_slow = [p for p in steps.fetched if p.startswith("slow")]
        left = await left_in(queue)
        assert sorted(fetched_slow + [str(d.payload) for d in left]) == sorted(f"slow/{n}" for n in range(20))
        # past the caps (with a delay) or still parked at the stop (at once): republished, no attempt spent
        assert {d.attempt for d in left} == {1}
        assert not steps.handed_back  # (no request was retried, so none was nacked with a delay)


async def test_a_domain_blocked_past_the_horizon_goes_back_to_the_queue_with_the_delay() -> None:
    async with MemoryQueue() as queue:
        limiter = DomainLimiter(concurrency=2, max_backoff=300)
        limiter.feedback("blocked", 429, "300")  # as a response with `Retry-After: 300` does
        await queue.publish("t", [f"blocked/{n}" for n in range(10)] + [f"free/{n}" for n in range(10)])
        steps = Steps(queue, lambda done: len(done) == 10)
        await run(queue, limiter, steps, 4)
        assert sorted(steps.fetched) == sorted(f"free/{n}" for n in range(10))
        assert await queue.pending("t") == 10  # delayed in the queue: none lost
        assert not await queue.consume(
            "t", group="g", max_messages=10, wait=0.05
        )  # not before the block ends


async def test_stopping_hands_parked_requests_back_at_once() -> None:
    async with MemoryQueue(visibility_timeout=3600) as queue:
        await queue.publish("t", [f"a/{n}" for n in range(6)])
        steps = Steps(queue, lambda done: False)
        steps.hold["a"] = anyio.Event()
        limiter = DomainLimiter(concurrency=1)
        async with anyio.create_task_group() as tg:
            tg.start_soon(run, queue, limiter, steps, 3)
            await anyio.sleep(0.1)  # one request downloading, the others parked (the domain is full)
            assert steps.feeder is not None
            steps.feeder.stop()
            steps.hold["a"].set()  # the one in flight finishes
        assert steps.fetched == ["a/0"]
        left = await left_in(queue)
        assert sorted(str(d.payload) for d in left) == [f"a/{n}" for n in range(1, 6)]
        assert {d.attempt for d in left} == {1}  # a first attempt still: parse takes none for a redelivery


async def test_cancelling_the_run_hands_parked_requests_back() -> None:
    async with MemoryQueue(visibility_timeout=3600) as queue:
        await queue.publish("t", [f"a/{n}" for n in range(6)])
        steps = Steps(queue, lambda done: False)
        limiter = DomainLimiter(concurrency=1)
        held = limiter.try_acquire("a")  # the domain is full: everything leased gets parked
        async with anyio.create_task_group() as tg:
            tg.start_soon(run, queue, limiter, steps, 3)
            await anyio.sleep(0.1)
            tg.cancel_scope.cancel()
        assert not steps.fetched and not isinstance(held, float)
        assert sorted(str(d.payload) for d in await left_in(queue)) == [f"a/{n}" for n in range(6)]


async def test_a_domain_full_job_wide_does_not_hold_a_worker(tmp_path: pathlib.Path) -> None:
    async with (
        MemoryQueue() as queue,
        LmdbDomainGate(str(tmp_path / "gates")) as gate,
        GatedLimiter(DomainLimiter(concurrency=1), gate, reuse_for=0) as other_worker,
        GatedLimiter(DomainLimiter(concurrency=1), gate, reuse_for=0) as limiter,
    ):
        theirs = other_worker.try_acquire("busy")  # another worker of the job holds the one slot
        assert not isinstance(theirs, float) and await other_worker.admit(theirs) is None
        await queue.publish("t", ["busy/0", "busy/1"] + [f"free/{n}" for n in range(10)])
        steps = Steps(queue, lambda done: len(done) == 12)
        async with anyio.create_task_group() as tg:
            tg.start_soon(run, queue, limiter, steps, 2)
            with anyio.fail_after(5):
                await steps.until(lambda done: len(done) == 10)
            assert sorted(steps.fetched) == sorted(f"free/{n}" for n in range(10))
            await theirs.abandon()  # the other worker leaves: the parked requests go (the gate is polled)
        assert sorted(steps.fetched)[:2] == ["busy/0", "busy/1"]


async def test_a_spaced_domain_parks_its_requests_until_their_start() -> None:
    async with MemoryQueue() as queue:
        await queue.publish("t", ["spaced/0", "spaced/1", "spaced/2", "other/0"])
        steps = Steps(queue, lambda done: len(done) == 4)
        started: dict[str, float] = {}
        fetch = steps.fetch

        async def timed_fetch(delivery: Delivery, payload: str, permit: Permit) -> None:
            started[payload] = anyio.current_time()
            await fetch(delivery, payload, permit)

        steps.fetch = timed_fetch  # type: ignore[method-assign]
        limiter = DomainLimiter(concurrency=4)
        limiter.configure("spaced", delay=0.2)
        await run(queue, limiter, steps, 3)
        assert started["other/0"] - started["spaced/0"] < 0.1  # not behind the spaced domain's wait
        gaps = [started[f"spaced/{n + 1}"] - started[f"spaced/{n}"] for n in range(2)]
        assert all(gap >= 0.19 for gap in gaps), gaps
        assert math.isfinite(sum(gaps))


async def test_a_retried_request_parked_at_the_stop_is_nacked_through_the_stage() -> None:
    async with MemoryQueue(visibility_timeout=3600) as queue:
        await queue.publish("t", ["a/0", "a/1"])
        [first, second] = await queue.consume("t", group="g", max_messages=2, wait=0)
        await queue.nack(second, delay=0)  # a/1 comes back as a second attempt
        steps = Steps(queue, lambda done: False)
        steps.hold["a"] = anyio.Event()
        limiter = DomainLimiter(concurrency=1)
        held = limiter.try_acquire("a")  # full: a/1 is parked
        async with anyio.create_task_group() as tg:
            tg.start_soon(run, queue, limiter, steps, 2)
            await anyio.sleep(0.1)
            assert steps.feeder is not None
            steps.feeder.stop()
        assert steps.handed_back == [("a/1", 0.0)]  # the stage notes it unparsed, then nacks it
        assert not isinstance(held, float)
        await queue.ack([first])
