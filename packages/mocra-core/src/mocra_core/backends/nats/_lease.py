"""`Leases`: the deliveries a `NatsJetStreamQueue` handed out, and the rules that make them.

A server lease lasts `ack_wait` seconds (the liveness timeout, or the visibility timeout if shorter) from
its delivery or its last in-progress ack; the queue's lease keeper renews what this process holds while
it lives, until the visibility timeout since delivery has passed. So a killed worker's messages come back
within `ack_wait`, and a live one keeps them up to the visibility timeout.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ...queue._codec import decode_problem
from ...queue._delivery import Delivery
from ...queue._waiters import new_lease_token

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from ...queue._codec import Codec
    from ._pull import Puller
    from ._wire import Raw

__all__ = ("Admitted", "Lease", "Leases")


class Lease:
    """A delivery this process handed out: what it needs to ack, nack or dead-letter it."""

    __slots__ = ("attempt", "puller", "raw")

    def __init__(self, raw: Raw, attempt: int, puller: Puller) -> None:
        self.raw = raw
        self.attempt = attempt
        self.puller = puller


class Admitted:
    """What `Leases.admit` made of delivered messages."""

    __slots__ = ("dead", "deliveries", "held")

    def __init__(self) -> None:
        self.deliveries: list[Delivery] = []
        self.dead: list[tuple[Raw, int, str]] = []  # (message, attempt, reason) for the DLQ
        self.held: list[tuple[Raw, float]] = []  # first delivery of a delayed message, seconds until due


class Leases:
    """Turns delivered messages into deliveries and remembers their leases until they end.

    A message's attempt is its envelope's attempt plus the server's delivery count minus one, minus one
    more for a delayed message (its first delivery is always held back). A lease ends early by `margin`
    seconds: an ack that might reach the server after it redelivered the message is not sent.
    """

    def __init__(
        self,
        codec: Codec,
        *,
        visibility_timeout: float,
        ack_wait: float,
        max_attempts: int,
        clock: Callable[[], float],
    ) -> None:
        self._decode = codec.decode
        self.visibility_timeout = visibility_timeout
        self.ack_wait = ack_wait
        self.max_attempts = max_attempts
        self.margin = min(0.1 * ack_wait, 1.0)
        self._renew_after = ack_wait / 3  # a lease this old (since delivery or renewal) is renewed
        self._clock = clock
        self._leases: dict[int, Lease] = {}
        self._sweep_at = 0.0

    def __len__(self) -> int:
        return len(self._leases)

    def expiry(self, raw: Raw) -> float:
        """When this process stops trusting its lease of `raw` (its clock), a margin before the server's."""
        return min(raw.received + self.visibility_timeout, raw.renewed + self.ack_wait) - self.margin

    def renewable(self, raw: Raw, now: float) -> bool:
        """Whether an in-progress ack for `raw` is due now and would lengthen its lease."""
        return (
            raw.renewed + self._renew_after <= now < self.expiry(raw)
            and raw.renewed + self.ack_wait < raw.received + self.visibility_timeout
        )

    def to_renew(self, now: float, buffers: Iterable[list[Raw]]) -> list[Raw]:
        """The messages of live leases, and those waiting in `buffers`, whose in-progress ack is due."""
        raws = [lease.raw for lease in self._leases.values() if self.renewable(lease.raw, now)]
        return raws + [raw for buffer in buffers for raw in buffer if self.renewable(raw, now)]

    def admit(self, puller: Puller, raws: list[Raw]) -> Admitted:
        """Sort delivered messages into deliveries (leased now), dead ones and held-back ones."""
        out = Admitted()
        now = self._clock()
        vis, max_attempts = self.visibility_timeout, self.max_attempts
        for raw in raws:
            env = raw.envelope
            if self.expiry(raw) <= now:
                continue  # waited in the buffer until its lease ran out: the server redelivers it
            if env is None:
                out.dead.append((raw, raw.info.delivered, raw.problem or "undecodable"))
                continue
            held = raw.due is not None
            if held and raw.info.delivered == 1:
                out.held.append((raw, max((raw.due or 0.0) - time.time(), 0.0)))
                continue
            attempt = env.attempt + raw.info.delivered - 1 - held
            if attempt > max_attempts:
                reason = f"lease expired (visibility timeout {vis:g} s)"
                reason += f" on attempt {attempt - 1} of {max_attempts}"
                out.dead.append((raw, attempt - 1, reason))
                continue
            try:
                payload = self._decode(env.body)
            except Exception as exc:  # any codec failure makes a poison message
                out.dead.append((raw, attempt, decode_problem(exc)))
                continue
            token = new_lease_token()
            self._leases[token] = Lease(raw, attempt, puller)
            out.deliveries.append(
                Delivery(
                    env.id,
                    puller.topic,
                    payload,
                    env.key,
                    env.priority,
                    attempt,
                    env.created,
                    token,
                    env.prior_attempts,
                )  # fmt: skip
            )
        if now >= self._sweep_at:
            self._sweep(now)
        return out

    def undo(self, deliveries: list[Delivery]) -> None:
        """Take back deliveries never handed out (the call was cancelled): buffer their messages again."""
        for delivery in deliveries:
            lease = self._leases.pop(delivery._lease, None)
            if lease is not None:
                lease.puller.buffer.append(lease.raw)

    def end(self, delivery: Delivery) -> Lease | None:
        """The live lease of `delivery`, removed; `None` if stale (ended already, or past its deadline)."""
        lease = self._leases.pop(delivery._lease, None)
        if lease is None or self.expiry(lease.raw) <= self._clock() or lease.puller.topic != delivery.topic:
            return None
        return lease

    def clear(self) -> None:
        """Forget every lease (the queue is closed)."""
        self._leases.clear()

    def _sweep(self, now: float) -> None:
        self._sweep_at = now + min(self.ack_wait, 60.0)
        for token in [t for t, lease in self._leases.items() if self.expiry(lease.raw) <= now]:
            del self._leases[token]
