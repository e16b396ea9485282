"""`Permit`: a domain's slot taken without waiting (`try_acquire`); `DomainAdmission` hands them out.

A worker that waits for a domain's slot is a worker lost to every other domain. `try_acquire` either grants
a slot at once or says when asking again can succeed, so the download stage parks a request of a busy
domain and takes another one instead (see `mocra_core.engine` `DomainFeeder`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType
    from typing import Self

    from ._gate import Ticket
    from ._gate_limiter import GatedLimiter
    from ._limiter import DomainLimiter, DomainState, _Domain

__all__ = ("DomainAdmission", "Permit")


class Permit:
    """One slot of a domain held for one request, from `try_acquire`: the request may start now.

    Run the request inside `async with permit:`; leaving the block gives the slot back (and a job-wide
    ticket, if `GatedLimiter.admit` took one). A request that does not run after all gives it back with
    `abandon`, which also hands back the start it reserved under the domain's delay, unless a later start
    was reserved since. Giving back twice does nothing. Not reentrant; one task at a time.

    Attributes:
        domain: The domain (lower-cased host name) the slot belongs to.
        wait: Seconds from `admit` to the start a job-wide gate reserved (0 without a gate): sleep that
            long, or park the request until then, before starting it.
        acquired: When the slot was taken (monotonic seconds), for whoever measures how long slots are held.
        on_release: Called with the permit once its slot is given back (the download stage wakes the
            requests parked on the domain).

    Example:
        >>> import anyio
        >>> from mocra_core.download import DomainLimiter
        >>> limiter = DomainLimiter(concurrency=1)
        >>> async def main() -> tuple[int, float, int]:
        ...     permit = limiter.try_acquire("https://example.com/a")
        ...     assert not isinstance(permit, float)
        ...     refused = limiter.try_acquire("example.com")  # its one slot is taken: ask after a release
        ...     async with permit:
        ...         active = limiter.state("example.com").active
        ...     return active, refused, limiter.state("example.com").active
        >>> anyio.run(main)
        (1, inf, 0)
    """

    __slots__ = (
        "_d",
        "_gated",
        "_limiter",
        "_previous",
        "_reserved",
        "acquired",
        "domain",
        "done",
        "on_release",
        "ticket",
        "wait",
    )

    def __init__(
        self,
        limiter: DomainLimiter,
        domain: str,
        d: _Domain,
        previous: float | None = None,
        reserved: float | None = None,
    ) -> None:
        self._limiter = limiter
        self._d = d
        self._previous = previous  # the domain's next start before this permit reserved one
        self._reserved = reserved  # the next start this permit set
        self._gated: GatedLimiter | None = None
        self.domain = domain
        self.ticket: Ticket | None = None
        self.wait = 0.0
        self.acquired = 0.0
        self.done = False
        self.on_release: Callable[[Permit], object] | None = None

    def attach(self, gated: GatedLimiter, ticket: Ticket) -> None:
        """Hold `ticket` too (a job-wide slot, from `GatedLimiter.admit`); it goes back with the permit."""
        self._gated = gated
        self.ticket = ticket
        self.wait = ticket.wait

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._give_back(used=True)

    async def abandon(self) -> None:
        """Give the slot back unused: the request did not start (its reserved start is given back too)."""
        await self._give_back(used=False)

    def release_local(self, *, used: bool) -> None:
        """Give back the domain's slot in this process (not a ticket: see `abandon`); idempotent."""
        if self.done:
            return
        self.done = True
        d = self._d
        if not used and self._reserved is not None and d.next_start == self._reserved:
            d.next_start = self._previous or 0.0
        self._limiter._release(self.domain, d)
        if self.on_release is not None:
            self.on_release(self)

    async def _give_back(self, *, used: bool) -> None:
        ticket, self.ticket = self.ticket, None
        if ticket is None or self._gated is None:
            self.release_local(used=used)
            return
        try:
            await self._gated._release(ticket)
        finally:
            self.release_local(used=used)

    def __repr__(self) -> str:
        return f"<Permit {self.domain} done={self.done} ticket={self.ticket is not None}>"


class DomainAdmission(Protocol):
    """Hands out domain slots without waiting: `DomainLimiter`, `GatedLimiter`, `ShareLimiter`.

    `try_acquire` is synchronous and O(1): a `Permit`, or the seconds before asking again can succeed
    (`math.inf`: once a slot of the domain is given back in this process). When `needs_admit` is True the
    permit must then pass `admit` (a job-wide gate, a member count to refresh) before its request starts:
    `admit` returns None once it may start (after `permit.wait` seconds), or the seconds before asking
    again, having given the permit back.
    """

    @property
    def needs_admit(self) -> bool:
        """Whether a permit must pass `admit` before its request starts."""
        ...

    def try_acquire(self, url_or_domain: str) -> Permit | float:
        """A slot of the domain now, or the seconds before asking again (see the class notes)."""
        ...

    async def admit(self, permit: Permit) -> float | None:
        """The job-wide step of a permit: None to go ahead, or seconds before asking again (given back)."""
        ...

    def state(self, url_or_domain: str) -> DomainState:
        """A snapshot of the domain's limits."""
        ...
