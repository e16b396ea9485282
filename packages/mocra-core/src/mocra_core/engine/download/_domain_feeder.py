"""`DomainFeeder`: leases requests for the download workers so that no domain can hold a worker it cannot use.

A worker takes a leased request, `prepare`s it (robots.txt, middleware, login: no slot needed), then asks its
domain for a slot without waiting (`try_acquire`). Granted, it fetches at once (the hot path: no extra
await); refused, the request is parked in `DomainQueues` and the worker takes another one. A parked request
is taken, round-robin over domains, as soon as its domain can start it: a slot given back wakes a full
domain, a timer a spaced or polled one. With a job-wide gate (`GatedLimiter`) a refused ticket parks the
request again; a start the gate reserved for later parks it with its ticket until then.

With an `AutoscaledConcurrency` (`crawl.autoscale`), a worker holds one of its slots from taking an item
to finishing it, so at most its `desired` workers work at once; a worker waiting for an item counts as
idle for its growth decision.

Leasing: how much and when is `LeasePace`'s decision (`_lease_pace.py`); past the caps the surplus goes
back to the queue with a delay.

Handing back keeps the retry budget: a request on its first attempt is published again with the delay,
then acked (publish first: a crash in between duplicates it, never loses it); a retried one is nacked with
the delay (the attempt it costs is the price of not losing its count). On stop, halt or cancellation every
request still parked or unprepared goes back at once the same way: a first attempt comes back as a first
attempt, which the parse stage does not take for a redelivery that may have been parsed already
(`LeaseReturn`, `engine/_lease_return.py`).
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

import anyio

from ...control import Hold
from .._lease_return import LeaseReturn
from .._transient import TRANSIENT
from ._domain_queues import DomainQueues, Parked
from ._idle_workers import IdleWorkers
from ._lease_pace import DISCOVERY_MAX, LeasePace

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from ...download import AutoscaledConcurrency
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
_RESERVED_SLEEP = 0.005  # a start reserved sooner than this is slept for by the worker, not parked
_NO_SLOT = contextlib.nullcontext()  # a worker's slot when no autoscale gate bounds them
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
        autoscale: A gate whose slots the workers hold while they work (None: all of them work).
        visibility_timeout: The queue's; a request stays parked at most a quarter of it.
        wait: Seconds one `consume` may wait for a message.
        clock: Monotonic seconds.
        hold: A pause gate: while held, nothing is leased and no worker starts a request (`_hold_on`).
    """

    def __init__(
        self,
        queue: QueueBackend,
        topic: str,
        group: str,
        limiter: DomainAdmission,
        *,
        outage: Outage | None = None,
        autoscale: AutoscaledConcurrency | None = None,
        visibility_timeout: float = 300.0,
        wait: float = 0.2,
        clock: Callable[[], float] = time.monotonic,
        hold: Hold | None = None,
    ) -> None:
        self._hold = hold if hold is not None else Hold()
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
        self._idle = IdleWorkers(on_wait=lambda: self._changed.set())
        self._autoscale = autoscale
        if autoscale is not None:
            autoscale.idle = lambda: self._idle.waiting
        self._new: deque[Delivery] = deque()  # leased, not yet prepared
        self._pace = LeasePace(clock)
        self._return: LeaseReturn | None = None  # while running
        self._queues: DomainQueues[T] | None = None

    def stop(self) -> None:
        """Lease nothing more; workers return after their current request; the parked ones go back."""
        self._stopping = True
        self._changed.set()
        self._idle.wake_all()

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
        self._return = LeaseReturn(self._queue, self._topic, nack=steps.hand_back, republish_first=True)
        try:
            async with anyio.create_task_group() as tg:
                for index in range(workers):
                    tg.start_soon(self._work, steps, name=f"{self._group}-{index}")
                tg.start_soon(self._timers, name=f"{self._group}-timers")
                try:
                    await self._feed()
                finally:
                    self._closed = True  # workers return after their current request, the timers at once
                    self._idle.wake_all()
                    self._timer_event.set()
        finally:
            await _give_all_back(queues, self._new, self._return_())

    # ------------------------------------------------------------------ leasing

    async def _feed(self) -> None:
        queues = self._queues_()
        while not self._stopping:
            if self._hold.held:  # paused (a flag check while running)
                await _hold_on(self._hold, self._new, self._return_())
                continue
            want, until = self._pace.want(queues, waiting=self._idle.waiting, unprepared=bool(self._new))
            if want <= 0:
                self._changed = anyio.Event()
                with anyio.move_on_after(max(0.0, until - self._clock())):
                    await self._changed.wait()
                if queues.returns:
                    await self._flush()
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
            self._pace.leased(queues, len(deliveries))
            self._new.extend(deliveries)
            self._idle.wake(len(deliveries))

    # ------------------------------------------------------------------ workers

    async def _work(self, steps: DownloadSteps[T]) -> None:
        gate = self._autoscale
        while True:
            async with _NO_SLOT if gate is None else gate.slot():
                if not await self._handle_next(steps):
                    return

    async def _handle_next(self, steps: DownloadSteps[T]) -> bool:
        """Take the next item and handle it; False once closed."""
        item = await self._next()
        if item is None:
            return False
        try:
            if isinstance(item, tuple):
                await self._start(steps, *item)
            else:
                await self._prepare(steps, item)
        except TRANSIENT as exc:  # left leased: it comes back when its lease expires
            if self._outage is None:
                raise
            self._outage.failed(exc, f"handling a {self._topic!r} message")
        return True

    async def _next(self) -> tuple[Parked[T], Permit] | Delivery | None:
        """A parked request its domain can start now, else an unprepared one; None once closed."""
        queues = self._queues_()
        while not self._closed and not self._stopping:
            if self._hold.held:  # paused: start nothing until resumed (or stopped: `Hold.release`)
                await self._hold.wait()
                continue
            ready = queues.take()
            if queues.returns:
                if ready is not None:  # not lost if cancelled while handing the others back
                    queues.reserve(ready[0], ready[1], 0.0)
                await self._flush()
                continue
            if ready is not None:
                self._changed.set()
                return ready
            if self._new:
                delivery = self._new.popleft()
                if not self._new:
                    self._changed.set()
                return delivery
            await self._idle.wait()
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
                await self._flush()
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
            self._idle.wake(1)
            self._changed.set()

    def _on_timer(self, at: float) -> None:
        if at < self._timer_at:
            self._timer_event.set()

    async def _timers(self) -> None:
        """Wake workers when timed domains and reserved starts come due; send back what stays too long."""
        queues = self._queues_()
        sweep_every = max(1.0, self._max_park / 4)
        next_sweep = self._clock() + sweep_every
        while True:
            woken = queues.due()
            if woken:
                self._idle.wake(woken)
            now = self._clock()
            if now >= next_sweep:
                queues.sweep()
                next_sweep = now + sweep_every
            if queues.returns:
                await self._flush()
            self._timer_at = min(queues.next_deadline(), next_sweep)
            self._timer_event = anyio.Event()
            if self._is_closed():  # a method: `run` closes while this task awaits
                return
            with anyio.move_on_after(max(0.0, self._timer_at - self._clock())):
                await self._timer_event.wait()

    # ------------------------------------------------------------------ handing back

    async def _flush(self) -> None:
        """Send back `returns`: republished with the delay then acked (first attempt), else nacked."""
        queues, back = self._queues_(), self._return_()
        while queues.returns:
            entry, delay, reason = queues.returns.popleft()
            try:
                await back.send(entry.delivery, delay, reason)
                logger.debug("%s: back to the queue for %.2fs (%s)", entry.domain, delay, reason)
            except TRANSIENT as exc:  # left leased: it comes back when its lease expires
                if self._outage is None:
                    raise
                self._outage.failed(exc, f"handing a {self._topic!r} message back")
        self._changed.set()

    def _is_closed(self) -> bool:
        return self._closed

    def _queues_(self) -> DomainQueues[T]:
        assert self._queues is not None
        return self._queues

    def _return_(self) -> LeaseReturn:
        assert self._return is not None
        return self._return


async def _give_all_back(queues: DomainQueues[T], new: deque[Delivery], back: LeaseReturn) -> None:
    """Send back at once all that is still leased here: unprepared (`new`), parked, about to go back."""
    entries, permits = queues.drain()
    left = [*new, *(entry.delivery for entry in entries)]
    left += [entry.delivery for entry, _, _ in queues.returns]
    new.clear()
    queues.returns.clear()

    async def abandon() -> None:
        for permit in permits:
            await permit.abandon()

    await back.send_all(left, "worker stopped", first=abandon if permits else None)


async def _hold_on(hold: Hold, new: deque[Delivery], back: LeaseReturn) -> None:
    """Paused: hand back what is leased and unprepared (parked ones: swept as always); wait 1 s at most."""
    left = list(new)
    new.clear()
    await back.send_all(left, "paused")
    with anyio.move_on_after(1.0):
        await hold.wait()
