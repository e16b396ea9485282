"""`QueueBackend`: the one protocol stages use to hand work to each other."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import TracebackType
    from typing import Self

    from ._delivery import DeadLetter, Delivery

__all__ = ("QueueBackend",)


class QueueBackend(Protocol):
    """At-least-once queue between stages: publish, lease, then ack, nack or dead-letter.

    Every backend (memory, LMDB, Redis Streams, NATS JetStream, Kafka) keeps this contract; the conformance
    suite in `tests/queue/test_conformance.py` is its executable form.

    **Topics and groups.** A topic (a non-empty `str` without NUL) is a work queue: each message is
    handed to one consumer at a time. Payloads are any objects the backend's codec can encode; the memory
    backend hands out the published objects themselves, the others decoded copies.
    `group` names the stage consuming a topic (a Redis/Kafka consumer group, a NATS durable); all consumers
    of one topic pass the same group. Several groups on one topic are outside this contract (networked
    backends may fan out; the in-process backends raise `ValueError`).

    **Message life.** `publish` makes messages *ready* (or *delayed* until `delay` seconds have passed).
    `consume` *leases* ready messages: a `Delivery` belongs to its consumer until exactly one of

    - `ack`: done; the message is gone.
    - `nack`: failed; it comes back after `delay` seconds with `attempt + 1` — or, if its attempt was
      already `max_attempts`, goes to the dead-letter queue (DLQ) with `reason`.
    - `dead_letter`: failed for good; straight to the DLQ with `reason`.
    - the backend's `visibility_timeout` passes: the lease expires and the message comes back, to any
      consumer, with `attempt + 1` (or to the DLQ once `max_attempts` deliveries have expired or failed).

    A message is therefore delivered at least once; handlers must be idempotent. The DLQ of a topic keeps
    its messages, oldest first, until `replay` sends them back with the attempt count reset.

    **Stale deliveries.** Every lease has its own token. `ack`, `nack` and `dead_letter` of a delivery
    whose lease is over (acked already, or expired and handed out again) do nothing: acking twice, or
    late, never loses or double-counts a message.

    **Order.** `consume` hands out the highest priority lane first (any 64-bit `int`; higher first) and,
    within a lane, messages in publish order (a batch keeps its order). A message that comes back (expired
    lease, nack, replay) or was delayed may be handed out before or after newer messages of its lane; the
    in-process backends put an expired or undelayed-nacked message back at its old place, and a delayed or
    replayed one at the tail of its lane once it is due.

    **Partition keys.** While a delivery with key K is leased, no other message with key K is handed out,
    so messages with one key are processed by one consumer at a time and, if they were published to one
    lane, in publish order (up to the message-that-comes-back caveat above). A message with key K waits,
    without holding up other keys or unkeyed messages, until the lease of K ends. Messages without a key
    have no such constraint.

    **Accounting.** `pending(topic)` counts messages published and not yet acked or dead-lettered:
    ready, delayed and leased. The DLQ is not pending; `replay` makes its messages pending again.

    **Time.** `delay`, `wait` and `visibility_timeout` are seconds; `wait` runs on the event loop's clock,
    delays and leases on the backend's. `Delivery.created` and `DeadLetter.failed_at` are wall-clock epoch
    seconds.

    **Concurrency and cancellation.** Any number of tasks of one event loop may call any method
    concurrently (backends are not thread-safe). If `consume` is cancelled nothing is leased; `publish`,
    `ack`, `nack` and `dead_letter` either take full effect or (when they raise, including on
    cancellation) none for in-process backends, while a networked backend may have applied a prefix of a
    batch. After `aclose` every call raises `anyio.ClosedResourceError`, and so do `consume` calls waiting
    at that moment. Use the backend as an async context manager.
    """

    async def publish(
        self,
        topic: str,
        payloads: Sequence[object],
        *,
        key: str | None = None,
        priority: int = 0,
        delay: float = 0.0,
    ) -> None:
        """Add messages to `topic`, in order; all share `key`, `priority` and `delay` (seconds)."""
        ...

    async def consume(
        self, topic: str, *, group: str, max_messages: int = 1, wait: float = 1.0
    ) -> Sequence[Delivery]:
        """Lease up to `max_messages` ready messages, waiting up to `wait` seconds for at least one.

        Returns as soon as one message can be leased (never waits to fill a batch), and `[]` when `wait`
        passes first. Wakes promptly when a message is published, nacked, replayed or released by a key,
        when a delayed message becomes due and when a lease expires.
        """
        ...

    async def ack(self, deliveries: Sequence[Delivery]) -> None:
        """Finish deliveries: their messages are gone. Stale deliveries are ignored."""
        ...

    async def nack(self, delivery: Delivery, *, delay: float = 0.0, reason: str = "") -> None:
        """Hand a delivery back: ready again after `delay` seconds with `attempt + 1`, or to the DLQ.

        The DLQ (with `reason`) is where it goes when `delivery.attempt >= max_attempts`. Stale deliveries
        are ignored.
        """
        ...

    async def dead_letter(self, delivery: Delivery, *, reason: str) -> None:
        """Move a delivery to its topic's DLQ with `reason`, whatever its attempt. Stale ones are ignored."""
        ...

    async def dead_letters(self, topic: str, *, limit: int = 100) -> Sequence[DeadLetter]:
        """Read (without removing) up to `limit` messages of `topic`'s DLQ, oldest first."""
        ...

    async def replay(self, topic: str, ids: Sequence[str] | None = None) -> int:
        """Move messages of `topic`'s DLQ (all, or those with the given ids) back to the topic.

        Replayed messages are ready at once, in their old lane and with their old key and id; their next
        delivery has `attempt == 1` and `prior_attempts` raised by the dead letter's attempt (the
        message's fencing token keeps rising: see `Fence`). Unknown ids are skipped. Returns how many
        were moved.
        """
        ...

    async def pending(self, topic: str) -> int:
        """Messages of `topic` published and not yet acked or dead-lettered (ready + delayed + leased)."""
        ...

    async def aclose(self) -> None:
        """Close the backend; idempotent. Unacked leases come back later (durable backends: on reopen)."""
        ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...
