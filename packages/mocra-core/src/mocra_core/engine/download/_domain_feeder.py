"""`DomainFeeder`: leases requests for the download workers so that no domain can hold a worker it cannot use.

A worker takes a leased request, `prepare`s it (robots.txt, middleware, login: no slot needed), then asks its
domain for a slot without waiting (`try_acquire`). Granted, it fetches at once (the hot path: no extra
await); refused, the request is parked in `DomainQueues` and the worker takes another one. A parked request
is taken, round-robin over domains, as soon as its domain can start it: a slot given back wakes a full
domain, a timer a spaced or polled one. With a job-wide gate (`GatedLimiter`) a refused ticket parks the
request again; a start the gate reserved for later parks it with its ticket until then.

Leasing: the feeder asks for as many requests as workers are idle, and only while nothing parked can start,
so it reaches a fast domain's requests queued behind a slow one's. Past the caps the surplus goes back to
the queue with a delay; once more than the parking's capacity was leased without finding a domain able to
start, each further lease waits a pause (doubling, up to `DISCOVERY_MAX`) — so a crawl of one busy domain
does not churn its queue — except to keep busy domains fed (`DomainQueues.hungry`). Only a start of a
domain that parks nothing counts as found work.

Handing back keeps the retry budget: a request on its first attempt is published again with the delay,
then acked (publish first: a crash in between duplicates it, never loses it); a retried one is nacked with
the delay (the attempt it costs is the price of not losing its count). On stop, halt or cancellation every
request still parked or unprepared goes back at once the same way: a first attempt comes back as a first
attempt, which the parse stage does not take for a redelivery that may have been parsed already.
"""

from __future__ import annotations

import logging
import math
import time
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

import anyio

from .._transient import TRANSIENT
from ._domain_queues import DomainQueues, Parked

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from ...download._permit import DomainAdmission, Permit
    from ...queue import Delivery, QueueBackend
    from .._outage import Outage

__all__ = ("DISCOVERY_MAX", "PARK_PER_WORKER", "DomainFeeder", "DownloadSteps")

logger = logging.getLogger(__name__)

T = TypeVar("T")

PARK_PER_WORKER = 4
"""Requests parked at most per download worker (a domain: at most half of them)."""
HORIZON = 10.0
"""Seconds: a domain whose next start is further away sends its requests back to the queue."""
DISCOVERY_MIN = 0.005
"""Seconds before a lease that follows one that found only busy domains; doubles each time."""
DISCOVERY_MAX = 1.0
"""Cap on that pause (seconds)."""
_RESERVED_SLEEP = 0.005  # a start reserved sooner than this is slept for by the worker, not parked
_GO, _HELD, _DONE = range(3)  # what `_admit` decided: fetch now, parked with its permit, nothing to do


@dataclass(frozen=True, slots=True)
class DownloadSteps(Generic[T]):
    """What the download stage does with a request, in the order the feeder calls it.

    Attributes:
        prepare: Everything before the slot (robots.txt, middleware, login). Returns the domain and what
            `fetch` needs, or None once the stage has finished the delivery (dropped, dead-lettered, …).
        fetch: Downloads under the permit (`async with permit:` around the request) and finishes it.
        hand_back: Nacks a delivery after `delay` seconds (noting it unparsed).
        failed: The job-wide gate failed for this delivery (e.g. unreachable): deal with it as a failure.
    """

    prepare: Callable[[Delivery], Awaitable[tuple[str, T] | None]]
    fetch: Callable[[Delivery, T, Permit], Awaitable[None]]
    hand_back: Callable[[Delivery, float, str], Awaitable[None]]
    failed: Callable[[Delivery, Exception], Awaitable[None]]


class DomainFeeder(Generic[T]):
    """Runs the download workers over per-domain ready queues fed by one `consume` loop.

    Args:
        queue: Where the requests come from (and go back to).
        topic: The request topic.
        group: The consumer group.
        limiter: The politeness limiter, asked without waiting.
        outage: Where an unreachable broker is noted (see `Feeder`); without it such errors propagate.
        visibility_timeout: The queue's; a request stays parked at most a quarter of it.
        wait: Seconds one `consume` may wait for a message.
        clock: Monotonic seconds.
    """

    def __init__(
        self,
        queue: QueueBackend,
        topic: str,
        group: str,
        limiter: DomainAdmission,
        *,
        outage: Outage | None = None,
        visibility_timeout: float = 300.0,
        wait: float = 0.2,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._queue = queue
        self._topic = topic
        self._group = group
        self._limiter = limiter
        self._outage = outage
        self._max_park = visibility_timeout / 4
        self._wait = wait
        self._clock = clock
        self._stopping = False
        self._halted = False
        self._closed = False
        self._consuming: anyio.CancelScope | None = None
        self._changed = anyio.Event()  # something the lease decision depends on changed
        self._timer_event = anyio.Event()
        self._timer_at = math.inf
        self._waiters: deque[anyio.Event] = deque()
        self._waiting = 0
        self._new: deque[Delivery] = deque()  # leased, not yet prepared
        self._returning: dict[int, Delivery] = {}  # being handed back right now
        self._scanned = 0  # requests leased since one could start at once
        self._last_size = 0  # requests of the last lease
        self._streak = 0  # leases since more than `total_cap` were scanned in vain: the pause doubles
        self._last_lease = -math.inf
        self._queues: DomainQueues[T] | None = None

    def stop(self) -> None:
        """Lease nothing more; workers return after their current request; the parked ones go back."""
        self._stopping = True
        self._changed.set()
        self._wake(len(self._waiters))

    def halt(self) -> None:
        """`stop`, and cancel a `consume` in progress (it leases nothing)."""
        self._halted = True
        self.stop()
        if self._consuming is not None:
            self._consuming.cancel()

    async def run(self, workers: int, steps: DownloadSteps[T]) -> None:
        """Feed `workers` workers through `steps` until stopped; returns when all are done."""
        total = PARK_PER_WORKER * workers
        queues = self._queues = DomainQueues(
            self._limiter,
            total_cap=total,
            domain_cap=max(1, total // 2),
            horizon=min(HORIZON, self._max_park),
            max_park=self._max_park,
            clock=self._clock,
        )
        queues.on_timer = self._on_timer
        try:
            async with anyio.create_task_group() as tg:
                for index in range(workers):
                    tg.start_soon(self._work, steps, name=f"{self._group}-{index}")
                tg.start_soon(self._timers, steps, name=f"{self._group}-timers")
                try:
                    await self._feed(steps)
                finally:
                    self._closed = True  # workers return after their current request, the timers at once
                    self._wake(len(self._waiters))
                    self._timer_event.set()
        finally:
            await self._give_all_back(queues, steps)

    # ------------------------------------------------------------------ leasing

    async def _feed(self, steps: DownloadSteps[T]) -> None:
        while not self._stopping:
            want, until = self._want(self._queues_())
            if want <= 0:
                self._changed = anyio.Event()
                with anyio.move_on_after(max(0.0, until - self._clock())):
                    await self._changed.wait()
                if self._queues_().returns:
                    await self._flush(steps)
                continue
            deliveries: Sequence[Delivery] = ()
            with anyio.CancelScope() as self._consuming:
                try:
                    deliveries = await self._queue.consume(
                        self._topic, group=self._group, max_messages=want, wait=self._wait
                    )
                except TRANSIENT as exc:
                    if self._outage is None:
                        raise
                    await anyio.sleep(self._outage.failed(exc, f"leasing {self._topic!r} messages"))
            self._consuming = None
            if not deliveries:
                if self._halted or self._stopping or (self._outage is not None and self._outage.over):
                    return
                continue
            self._leased(len(deliveries))
            self._new.extend(deliveries)
            self._wake(len(deliveries))

    def _want(self, queues: DomainQueues[T]) -> tuple[int, float]:
        """How many requests to lease now, or 0 and until when (at the latest) to wait for a change."""
        if self._new:
            return 0, math.inf
        room = queues.total_cap - queues.parked
        if not self._waiting:  # every worker busy: one in reserve, as `Feeder` holds
            return (1 if room > 0 and not queues.has_ready() else 0), math.inf
        if not queues.parked:
            return self._waiting, math.inf
        hungry = queues.hungry()
        if hungry:
            return max(1, min(room, hungry)), math.inf
        if self._streak:
            resume = self._last_lease + min(DISCOVERY_MAX, DISCOVERY_MIN * 2 ** (self._streak - 1))
            if self._clock() < resume:
                return 0, resume
        if room < self._waiting:
            queues.evict(self._waiting - room)
            if queues.returns:  # the feeder sends them back, then decides again
                return 0, self._clock()
        return max(1, min(self._waiting, queues.total_cap - queues.parked)), math.inf

    def _leased(self, size: int) -> None:
        """Count the requests leased in vain: past `total_cap` of them, leases pause (see `_want`)."""
        queues = self._queues_()
        if queues.fruitful or not queues.parked:
            self._scanned = self._streak = 0
        else:
            self._scanned += self._last_size
            if self._scanned > queues.total_cap:
                self._streak += 1
        queues.fruitful = False
        self._last_size = size
        self._last_lease = self._clock()

    # ------------------------------------------------------------------ workers

    async def _work(self, steps: DownloadSteps[T]) -> None:
        while True:
            item = await self._next(steps)
            if item is None:
                return
            try:
                if isinstance(item, tuple):
                    await self._start(steps, *item)
                else:
                    await self._prepare(steps, item)
            except TRANSIENT as exc:  # left leased: it comes back when its lease expires
                if self._outage is None:
                    raise
                self._outage.failed(exc, f"handling a {self._topic!r} message")

    async def _next(self, steps: DownloadSteps[T]) -> tuple[Parked[T], Permit] | Delivery | None:
        """A parked request its domain can start now, else an unprepared one; None once closed."""
        queues = self._queues_()
        while not self._closed and not self._stopping:
            ready = queues.take()
            if queues.returns:
                if ready is not None:  # not lost if cancelled while handing the others back
                    queues.reserve(ready[0], ready[1], 0.0)
                await self._flush(steps)
                continue
            if ready is not None:
                self._changed.set()
                return ready
            if self._new:
                delivery = self._new.popleft()
                if not self._new:
                    self._changed.set()
                return delivery
            event = anyio.Event()
            self._waiters.append(event)
            self._waiting += 1
            self._changed.set()
            try:
                await event.wait()
            except BaseException:
                if event.is_set():
                    self._wake(1)  # pass the wake-up on
                else:
                    self._waiters.remove(event)
                raise
            finally:
                self._waiting -= 1
        return None

    async def _prepare(self, steps: DownloadSteps[T], delivery: Delivery) -> None:
        prepared = await steps.prepare(delivery)
        if prepared is None:
            return
        domain, state = prepared
        entry = Parked(delivery, domain, state)
        queues = self._queues_()
        permit = queues.offer(entry)
        if permit is None:
            if queues.returns:
                await self._flush(steps)
            return
        await self._start(steps, entry, permit)

    async def _start(self, steps: DownloadSteps[T], entry: Parked[T], permit: Permit) -> None:
        """Admit `permit` job-wide if the limiter needs it, then fetch; the permit is given back after."""
        if permit.on_release is None:
            permit.acquired = self._clock()
            permit.on_release = self._released
        verdict = _GO
        try:
            if self._limiter.needs_admit and permit.ticket is None:
                verdict = await self._admit(steps, entry, permit)
            if verdict == _GO:
                await steps.fetch(entry.delivery, entry.prepared, permit)
        finally:
            if not permit.done and verdict != _HELD:
                with anyio.CancelScope(shield=True):
                    await permit.abandon()

    async def _admit(self, steps: DownloadSteps[T], entry: Parked[T], permit: Permit) -> int:
        """`_GO`: `permit` may start now; `_HELD`: parked with it until its reserved start; else `_DONE`."""
        queues = self._queues_()
        try:
            retry = await self._limiter.admit(permit)
            if retry is None and 0 < permit.wait <= _RESERVED_SLEEP:
                await anyio.sleep(permit.wait)
        except anyio.get_cancelled_exc_class():
            with anyio.move_on_after(5, shield=True):
                await permit.abandon()
                await self._queue.nack(entry.delivery, delay=0, reason="worker cancelled")
            raise
        except Exception as exc:  # the gate is out of reach (the permit is given back): a failure
            await steps.failed(entry.delivery, exc)
            return _DONE
        if retry is not None:  # full job-wide: the permit is given back
            queues.refused(entry, retry)
            return _DONE
        queues.admitted(entry.domain)
        if permit.wait > _RESERVED_SLEEP:
            queues.reserve(entry, permit, permit.wait)
            return _HELD
        return _GO

    # ------------------------------------------------------------------ events and timers

    def _released(self, permit: Permit) -> None:
        if self._queues is not None and self._queues.released(permit):
            self._wake(1)
            self._changed.set()

    def _wake(self, count: int) -> None:
        while count > 0 and self._waiters:
            self._waiters.popleft().set()
            count -= 1

    def _on_timer(self, at: float) -> None:
        if at < self._timer_at:
            self._timer_event.set()

    async def _timers(self, steps: DownloadSteps[T]) -> None:
        """Wake workers when timed domains and reserved starts come due; send back what stays too long."""
        queues = self._queues_()
        sweep_every = max(1.0, self._max_park / 4)
        next_sweep = self._clock() + sweep_every
        while True:
            woken = queues.due()
            if woken:
                self._wake(woken)
            now = self._clock()
            if now >= next_sweep:
                queues.sweep()
                next_sweep = now + sweep_every
            if queues.returns:
                await self._flush(steps)
            self._timer_at = min(queues.next_deadline(), next_sweep)
            self._timer_event = anyio.Event()
            if self._is_closed():  # a method: `run` closes while this task awaits
                return
            with anyio.move_on_after(max(0.0, self._timer_at - self._clock())):
                await self._timer_event.wait()

    # ------------------------------------------------------------------ handing back

    async def _flush(self, steps: DownloadSteps[T]) -> None:
        """Send back `returns`: republished with the delay then acked (first attempt), else nacked."""
        queues = self._queues_()
        while queues.returns:
            entry, delay, reason = queues.returns.popleft()
            delivery = entry.delivery
            self._returning[id(delivery)] = delivery
            try:
                await self._send_back(steps, delivery, delay, reason)
                logger.debug("%s: back to the queue for %.2fs (%s)", entry.domain, delay, reason)
            except TRANSIENT as exc:  # left leased: it comes back when its lease expires
                if self._outage is None:
                    raise
                self._outage.failed(exc, f"handing a {self._topic!r} message back")
            finally:
                self._returning.pop(id(delivery), None)
        self._changed.set()

    async def _give_all_back(self, queues: DomainQueues[T], steps: DownloadSteps[T]) -> None:
        """Send back at once all that is still leased here: unprepared, parked, about to go back."""
        entries, permits = queues.drain()
        left = [*self._new, *(entry.delivery for entry in entries)]
        left += [entry.delivery for entry, _, _ in queues.returns]
        interrupted = list(self._returning.values())  # maybe republished already: nacked, not again
        self._new.clear()
        queues.returns.clear()
        self._returning.clear()
        if not (left or permits or interrupted):
            return
        with anyio.move_on_after(5, shield=True):
            for permit in permits:
                await permit.abandon()
            try:
                for delivery in interrupted:
                    await self._queue.nack(delivery, delay=0, reason="worker stopped")
                for delivery in left:
                    await self._send_back(steps, delivery, 0.0, "worker stopped")
            except TRANSIENT:  # the broker is out of reach: the leases expire instead
                pass

    async def _send_back(
        self, steps: DownloadSteps[T], delivery: Delivery, delay: float, reason: str
    ) -> None:
        """Republish a first attempt with `delay`, then ack it (no attempt spent); else nack (`hand_back`)."""
        if delivery.attempt == 1:
            await self._queue.publish(
                self._topic, [delivery.payload], key=delivery.key, priority=delivery.priority, delay=delay
            )
            await self._queue.ack([delivery])
        else:
            await steps.hand_back(delivery, delay, reason)

    def _is_closed(self) -> bool:
        return self._closed

    def _queues_(self) -> DomainQueues[T]:
        assert self._queues is not None
        return self._queues
