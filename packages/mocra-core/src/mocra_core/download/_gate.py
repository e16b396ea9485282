"""`DomainGate`: job-wide admission per domain, so politeness holds across all the workers of a job."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from types import TracebackType
    from typing import Self

__all__ = ("MAX_DOMAIN_BYTES", "DomainGate", "Ticket", "check_enter")

MAX_DOMAIN_BYTES = 255
"""Longest domain a gate accepts, UTF-8 encoded (host names are at most 253 characters)."""


@dataclass(frozen=True, slots=True)
class Ticket:
    """One job-wide slot of a domain, handed out by `DomainGate.enter`; give it back with `leave`."""

    domain: str
    """The domain the slot belongs to."""
    holder: str
    """The gate's name for this holder, unique within the job."""
    wait: float
    """Seconds from the `enter` call to the start this ticket reserved: sleep that long, then start."""


class DomainGate(Protocol):
    """Admission to a domain shared by every worker of a job: a counting semaphore with spaced starts.

    Contract:
        * `enter(domain, limit=, gap=, ttl=)` either hands out a `Ticket` or returns a float, the seconds
          until the earliest current holder of the domain expires (an upper bound on the wait: holders
          usually `leave` sooner, so callers poll well within it). It hands out a ticket only while
          fewer than `limit` tickets of the domain are held across the job (`limit` is the caller's:
          workers may pass different ones, each is judged by its own).
        * Starts are spaced job-wide: a ticket reserves the start `max(now, next)` and moves the domain's
          `next` to that start plus `gap`, in the same atomic step, so `Ticket.wait` is how long the
          caller sleeps before its request (no spinning) and two reserved starts are at least the gap of
          the earlier one apart. A ticket counts as held from `enter` on, through its wait.
        * A ticket expires `ttl` seconds after its reserved start and then no longer counts, so the
          slots of a worker killed with SIGKILL come back; `renew(ticket, ttl=)` moves its expiry to
          `ttl` seconds from now, so a holder renews while its request runs.
        * `leave(ticket)` frees the slot at once; leaving an expired or already left ticket does
          nothing. A reservation of `next` is kept even if its ticket leaves early (it errs polite).
        * Time is the gate's own: the Redis server's clock, or the host's for LMDB. Each call is one
          atomic operation (one Lua script, one write transaction); a call that fails raises
          `mocra_core.BackendError` (Redis) or `CoordinationError` (LMDB) and changed nothing, or, if
          the reply was lost, may have taken a ticket that then expires after `ttl`.
        * `aclose` releases the connection or environment; `async with` calls it. Calling it twice is
          harmless; tickets held at that point expire after their ttl.

    Implementations: `RedisDomainGate` (workers on any hosts) and `LmdbDomainGate` (processes of one host
    sharing a job directory). `GatedLimiter` puts one in front of a per-process `DomainLimiter`.
    """

    async def enter(self, domain: str, *, limit: int, gap: float, ttl: float) -> Ticket | float:
        """Take a slot of `domain` and reserve a start, or return the seconds before the slots free up."""
        ...

    async def leave(self, ticket: Ticket) -> None:
        """Give the slot of `ticket` back."""
        ...

    async def renew(self, ticket: Ticket, *, ttl: float) -> bool:
        """Make `ticket` expire `ttl` seconds from now; False if it had expired or left (nothing is taken)."""
        ...

    async def aclose(self) -> None:
        """Release the connection or environment."""
        ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


def check_enter(domain: str, limit: int, gap: float, ttl: float) -> bytes:
    """Check the arguments of `DomainGate.enter` (for implementations); return the domain's UTF-8 bytes.

    Raises:
        ValueError: an argument makes no sense; the message names it.

    Example:
        >>> check_enter("example.com", 2, 0.5, 60.0)
        b'example.com'
        >>> check_enter("example.com", 0, 0.5, 60.0)
        Traceback (most recent call last):
        ...
        ValueError: limit: must be an int >= 1, got 0
    """
    if not isinstance(domain, str) or not domain:
        raise ValueError(f"domain: must be a non-empty host name, got {domain!r}")
    raw = domain.encode()
    if len(raw) > MAX_DOMAIN_BYTES or "\0" in domain:
        raise ValueError(f"domain: must be at most {MAX_DOMAIN_BYTES} bytes without NUL, got {domain!r}")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit: must be an int >= 1, got {limit!r}")
    if not (gap >= 0 and math.isfinite(gap)):
        raise ValueError(f"gap: must be a finite number of seconds >= 0, got {gap!r}")
    if not (ttl > 0 and math.isfinite(ttl)):
        raise ValueError(f"ttl: must be a finite number of seconds > 0, got {ttl!r}")
    return raw
