"""`Fence`: the fencing token of a worker's claim on a message, carried with the effects made under it.

A claim is one lease of a message (a `Delivery`). When the lease expires (the visibility timeout, or the
worker's liveness lapsed) the message is handed out again as a new claim, and the first worker — paused,
say, by a long GC or SIGSTOP — may still come back and try to commit. The token of a claim is the
delivery's `attempt`, which every backend raises by one for each new lease of a message, on the server
or in its file, never in the worker's memory:

- Redis Streams: the envelope's attempt plus the stream entry's delivery count (`XCLAIM` raises it);
- NATS JetStream: the envelope's attempt plus the server's `num_delivered`;
- Kafka: an expired lease is republished with `attempt + 1`; the next owner of a partition hands out
  what the lost member had leased with `attempt + 1` (read from the partition's state topic);
- LMDB and memory: the attempt kept with the message, raised when a lease expires or is nacked.

A replay from the dead-letter queue starts the attempts at 1 again (the retries and their back-off
start afresh), and the message keeps the attempts it had used before (`Delivery.prior_attempts`, stored
with it by every backend): the token is `prior_attempts + attempt`, so it keeps rising across replays and
a claim that outlived its message's trip through the DLQ loses to the replayed one. So two claims of one
message compare by their tokens: the higher is the newer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from ._delivery import Delivery

__all__ = ("Fence",)


class Fence(msgspec.Struct, frozen=True):
    """The claim an effect was made under: which message, and which lease of it.

    Attributes:
        claim: The message claimed, `"<topic>/<message id>"` (stable across its redeliveries).
        token: The claim's fencing token, monotonic per message: the delivery's attempt, plus the
            attempts its message used before its last replay from the DLQ.

    Example:
        >>> from mocra_core.queue import Delivery
        >>> first = Fence.of(Delivery("7", "fetch", None, None, 0, 1, 0.0))
        >>> again = Fence.of(Delivery("7", "fetch", None, None, 0, 2, 0.0))
        >>> first, first.stale_against(again), again.stale_against(first)
        (Fence(claim='fetch/7', token=1), True, False)
        >>> Fence.of(Delivery("7", "fetch", None, None, 0, 1, 0.0, prior_attempts=5))  # replayed from the DLQ
        Fence(claim='fetch/7', token=6)
    """

    claim: str
    token: int

    @classmethod
    def of(cls, delivery: Delivery) -> Fence:
        """The fence of the claim `delivery` stands for."""
        return cls(f"{delivery.topic}/{delivery.id}", delivery.prior_attempts + delivery.attempt)

    def stale_against(self, other: Fence) -> bool:
        """Whether an effect under this claim must lose to one under `other` (same message, newer lease)."""
        return self.claim == other.claim and self.token < other.token
