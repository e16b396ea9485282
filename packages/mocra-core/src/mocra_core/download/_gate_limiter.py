"""`GatedLimiter`: a per-process `DomainLimiter` whose slots also hold a job-wide `DomainGate` ticket."""

from __future__ import annotations

import logging
import math
import random as _random
from typing import TYPE_CHECKING

import anyio

from .._errors import MocraError
from ._gate import Ticket
from ._limiter import domain_of
from ._spare_tickets import SpareTickets

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType
    from typing import Self

    from anyio.abc import TaskGroup

    from ._gate import DomainGate
    from ._limiter import DomainLimiter, DomainState
    from ._permit import Permit

__all__ = ("POLL_MAX", "POLL_MIN", "REUSE_FOR", "SPARE_IDLE", "TICKET_TTL", "GatedLimiter")

logger = logging.getLogger(__name__)

POLL_MIN = 0.005
"""Seconds before a request asks a full gate again the first time; each further time doubles it."""
POLL_MAX = 0.05
"""Cap on that wait (seconds); a slot freed in this process wakes its waiters at once."""
TICKET_TTL = 10.0
"""Seconds a job-wide ticket lives unless renewed; held tickets are renewed every third of that, so the
slots of a worker killed with SIGKILL come back within this time."""
REUSE_FOR = 1.0
"""Seconds after the gate handed out a ticket during which this worker may pass it from a finished request
to its next request of the domain (only while the domain has no delay), instead of `leave` + `enter`."""
SPARE_IDLE = 0.05
"""Seconds a finished request's ticket waits for a next request of this worker before it goes back."""
_LEAVE_TIMEOUT = 5.0


class _GatedSlot:
    __slots__ = ("_key", "_limiter", "_local", "_ticket")

    def __init__(self, limiter: GatedLimiter, key: str) -> None:
        self._limiter = limiter
        self._key = key
        self._local = limiter.local.slot(key)
        self._ticket: Ticket | None = None

    async def __aenter__(self) -> None:
        await self._local.__aenter__()
        try:
            self._ticket = await self._limiter._admit(self._key)
        except BaseException:
            await self._local.__aexit__(None, None, None)
            raise

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        ticket, self._ticket = self._ticket, None
        try:
            if ticket is not None:
                await self._limiter._release(ticket)
        finally:
            await self._local.__aexit__(exc_type, exc, tb)


class GatedLimiter:
    """Politeness across the workers of a job: a `DomainLimiter` slot plus a job-wide `DomainGate` ticket.

    A slot first waits in this process's `DomainLimiter` (first come, first served; its delay, adaptive
    slow-down and `Retry-After` blocks), then takes a ticket from the gate, which every worker of the job
    shares, and sleeps until the start the ticket reserved. `try_acquire` + `admit` is the form that never
    waits for a full domain (the download stage parks the request instead). What holds where:

    - **Job-wide** (the gate): at most the domain's concurrency in flight across all workers, and request
      starts at least the domain's delay apart across all workers (plus the asking worker's adaptive
      extra delay, and jitter as `DomainLimiter.jitter` sets it).
    - **Per worker** (the local limiter): the adaptive state — a worker that sees 429/503 halves the
      concurrency and raises the gap *it* asks the gate for; the others keep theirs until they see such
      responses too. `Retry-After` blocks only the worker that received it. robots.txt `Crawl-delay`
      (`configure`) is applied by each worker as it reads robots.txt.

    While a domain is full the request asks the gate again after `POLL_MIN` seconds, doubling up to
    `POLL_MAX` (never later than the earliest holder's expiry), and at once when a request of this
    process leaves the domain. Waiting is not fair across workers: a worker whose requests keep the
    domain busy re-enters as soon as it leaves, while the others poll. A ticket expires `ttl` seconds
    after its start unless renewed; `async with` runs one task that, every `ttl / 3` seconds, renews the
    tickets held longer than that, so requests may run for any time (at no cost to short ones) and a
    killed worker's slots come back within `ttl`. `slot` outside `async with` raises `RuntimeError`.

    Reuse: while a domain has no delay (nor adaptive extra delay), the ticket of a finished request
    stays with this worker for up to `spare_idle` seconds, and its next request of the domain takes it
    without asking the gate; a ticket is reused only within `reuse_for` seconds of the gate handing it
    out, then it goes back, so the other workers get their turn. A busy worker thus asks the gate about
    once per ticket per `reuse_for` instead of twice per request; the job-wide limit is unchanged (an
    idle spare ticket still counts, for at most `spare_idle`). With a delay every start is reserved
    through the gate.
    Giving a ticket back runs shielded from cancellation (bounded to 5 s); if the gate fails then (or
    when renewing), the failure is logged and the ticket expires on its own.

    Args:
        local: The per-process limiter (its `concurrency` and `delay` are the job-wide limits).
        gate: The job's gate.
        ttl: Seconds a ticket lives after its start or its last renewal.
        reuse_for: Seconds after its `enter` during which a ticket passes between this worker's requests.
        spare_idle: Seconds a finished request's ticket waits for the next one before it goes back.
        random: Returns a float in [0, 1), for the jitter.

    Raises:
        ValueError: `ttl` is not a finite positive number of seconds, or `reuse_for`/`spare_idle` is
            negative or infinite (0 turns reuse off).

    Example:
        >>> import anyio, tempfile
        >>> from mocra_core.download import DomainLimiter, LmdbDomainGate
        >>> async def main(path: str) -> int:
        ...     async with LmdbDomainGate(path) as gate:
        ...         async with GatedLimiter(DomainLimiter(concurrency=2), gate) as limiter:
        ...             async with limiter.slot("https://example.com/a"):
        ...                 return limiter.state("example.com").active
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     anyio.run(main, tmp)
        1
    """

    __slots__ = (
        "_freed",
        "_held",
        "_issued",
        "_random",
        "_renewer",
        "_spares",
        "gate",
        "local",
        "reuse_for",
        "ttl",
    )

    needs_admit = True
    """A permit of `try_acquire` must pass `admit` (the job-wide gate) before its request starts."""

    def __init__(
        self,
        local: DomainLimiter,
        gate: DomainGate,
        *,
        ttl: float = TICKET_TTL,
        reuse_for: float = REUSE_FOR,
        spare_idle: float = SPARE_IDLE,
        random: Callable[[], float] = _random.random,
    ) -> None:
        if not (ttl > 0 and math.isfinite(ttl)):
            raise ValueError(f"ttl: must be a finite number of seconds > 0, got {ttl!r}")
        for name, value in (("reuse_for", reuse_for), ("spare_idle", spare_idle)):
            if not (value >= 0 and math.isfinite(value)):
                raise ValueError(f"{name}: must be a finite number of seconds >= 0, got {value!r}")
        self.local = local
        self.gate = gate
        self.ttl = ttl
        self._random = random
        self._freed: dict[str, anyio.Event] = {}
        self._held: dict[str, tuple[Ticket, float]] = {}  # holder -> ticket, when it was last renewed
        self._issued: dict[str, float] = {}  # holder -> when the gate handed it out (reusable tickets)
        self._spares = SpareTickets(spare_idle, self._leave)
        self.reuse_for = reuse_for
        self._renewer: TaskGroup | None = None

    @property
    def spare_idle(self) -> float:
        """Seconds a finished request's ticket waits for the next one before it goes back."""
        return self._spares.idle

    def slot(self, url_or_domain: str) -> _GatedSlot:
        """An async context manager holding a local slot and a job-wide ticket for one request.

        Entering waits for the local slot, then for a ticket, then until the ticket's start. Cancelled
        while waiting, it gives back what it took.

        Raises:
            RuntimeError: the limiter was not entered with `async with` (nothing would renew tickets).
        """
        if self._renewer is None:
            raise RuntimeError("enter the GatedLimiter (`async with`) before taking slots")
        return _GatedSlot(self, domain_of(url_or_domain))

    def configure(
        self, url_or_domain: str, *, concurrency: int | None = None, delay: float | None = None
    ) -> None:
        """Override the limits of one domain in this worker (see `DomainLimiter.configure`)."""
        self.local.configure(url_or_domain, concurrency=concurrency, delay=delay)

    def feedback(self, url_or_domain: str, status: int, retry_after: str | None = None) -> None:
        """Adapt this worker's limits of a domain to a response status (see `DomainLimiter.feedback`)."""
        self.local.feedback(url_or_domain, status, retry_after)

    def state(self, url_or_domain: str) -> DomainState:
        """A snapshot of this worker's limits of one domain."""
        return self.local.state(url_or_domain)

    def try_acquire(self, url_or_domain: str) -> Permit | float:
        """A slot of this process without waiting (`DomainLimiter.try_acquire`); then `admit` it job-wide.

        Raises:
            RuntimeError: the limiter was not entered with `async with`.
        """
        if self._renewer is None:
            raise RuntimeError("enter the GatedLimiter (`async with`) before taking slots")
        return self.local.try_acquire(url_or_domain)

    async def admit(self, permit: Permit) -> float | None:
        """Ask the gate once for the job-wide ticket of `permit` (from `try_acquire`); never waits for a slot.

        Returns None once the permit holds a ticket: its request starts after `permit.wait` seconds (the
        start the gate reserved; 0 for a reused ticket). Returns the seconds before asking again when the
        domain is full job-wide (the earliest holder's expiry, an upper bound: ask well within it, and at
        once after a request of this process leaves the domain); the permit has then been given back.
        Failing or cancelled, it gives the permit back too.

        Raises:
            BackendError: the gate failed (Redis) or `CoordinationError` (LMDB).
        """
        try:
            got = await self._enter_once(permit.domain)
        except BaseException:
            permit.release_local(used=False)
            raise
        if isinstance(got, float):
            permit.release_local(used=False)
            return got
        ticket, wait = got
        permit.attach(self, ticket)
        permit.wait = wait
        return None

    async def _enter_once(self, key: str) -> tuple[Ticket, float] | float:
        """A spare or new ticket of `key` and the seconds to its start, or the seconds before asking again."""
        state = self.local.state(key)
        spare = self._spares.take(key) if not (state.delay or state.extra_delay) else None
        if spare is not None:
            return spare, 0.0
        gap = state.delay
        if gap and self.local.jitter:
            gap *= 1.0 + self.local.jitter * (2.0 * self._random() - 1.0)
        got = await self.gate.enter(key, limit=state.concurrency, gap=gap + state.extra_delay, ttl=self.ttl)
        if not isinstance(got, Ticket):
            return got
        self._held[got.holder] = (got, anyio.current_time() + got.wait)
        if not gap and not state.extra_delay and self.reuse_for and self.spare_idle:
            self._issued[got.holder] = anyio.current_time()
        return got, got.wait

    async def _admit(self, key: str) -> Ticket:
        poll = POLL_MIN
        while True:
            got = await self._enter_once(key)
            if not isinstance(got, float):
                break
            freed = self._freed.get(key)
            if freed is None:
                freed = self._freed[key] = anyio.Event()
            with anyio.move_on_after(min(got, poll)):
                await freed.wait()
            poll = min(poll * 2, POLL_MAX)
        ticket, wait = got
        if wait > 0:
            try:
                await anyio.sleep(wait)
            except BaseException:
                await self._leave(ticket)
                raise
        return ticket

    async def _renew_held(self) -> None:
        """Every third of the ttl, renew the tickets held for longer than that (until cancelled)."""
        every = self.ttl / 3
        while True:
            await anyio.sleep(every)
            now = anyio.current_time()
            for holder, (ticket, renewed) in list(self._held.items()):
                if now - renewed < every or holder not in self._held:
                    continue
                try:
                    if await self.gate.renew(ticket, ttl=self.ttl):
                        if holder in self._held:
                            self._held[holder] = (ticket, now)
                    elif self._held.pop(holder, None) is not None:
                        logger.warning("a slot of %s expired while its request ran", ticket.domain)
                except MocraError as exc:
                    logger.warning("could not renew a slot of %s (it may expire): %s", ticket.domain, exc)

    async def _release(self, ticket: Ticket) -> None:
        """The request of `ticket` is done: keep the ticket for the next request, or give it back."""
        issued = self._issued.get(ticket.holder)
        now = anyio.current_time()
        if issued is not None and now - issued < self.reuse_for and self._renewer is not None:
            state = self.local.state(ticket.domain)
            if not (state.delay or state.extra_delay):
                self._spares.keep(ticket, now)
                freed = self._freed.pop(ticket.domain, None)
                if freed is not None:
                    freed.set()
                return
        await self._leave(ticket)

    async def _leave(self, ticket: Ticket) -> None:
        self._held.pop(ticket.holder, None)
        self._issued.pop(ticket.holder, None)
        with anyio.move_on_after(_LEAVE_TIMEOUT, shield=True) as scope:
            try:
                await self.gate.leave(ticket)
            except MocraError as exc:
                logger.warning(
                    "could not give back a slot of %s (it expires on its own): %s", ticket.domain, exc
                )
        if scope.cancelled_caught:
            logger.warning("giving back a slot of %s timed out (it expires on its own)", ticket.domain)
        freed = self._freed.pop(ticket.domain, None)
        if freed is not None:
            freed.set()

    async def __aenter__(self) -> Self:
        if self._renewer is not None:
            raise RuntimeError("this GatedLimiter is already entered")
        renewer = anyio.create_task_group()
        await renewer.__aenter__()
        renewer.start_soon(self._renew_held, name="gate-renewer")
        renewer.start_soon(self._spares.return_idle, name="gate-spares")
        self._renewer = renewer
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        renewer, self._renewer = self._renewer, None
        if renewer is not None:
            renewer.cancel_scope.cancel()
            await renewer.__aexit__(None, None, None)  # the body's exception, if any, goes on as it was
        for ticket in self._spares.drain():
            await self._leave(ticket)

    def __repr__(self) -> str:
        return f"<GatedLimiter {self.local!r} gate={self.gate!r} ttl={self.ttl}>"
