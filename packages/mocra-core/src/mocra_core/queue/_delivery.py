"""`Delivery` (a leased message) and `DeadLetter` (a message that gave up), shared by every backend."""

from __future__ import annotations

import msgspec

__all__ = ("DeadLetter", "Delivery")


class Delivery(msgspec.Struct, frozen=True):
    """A message leased to one consumer until it is acked, nacked or dead-lettered, or its lease expires.

    Deliveries are values: `msgspec.structs.replace(delivery, payload=...)` keeps the lease, so the copy can
    be acked in its place. Each lease has its own token (`_lease`), which is how a backend recognises a
    stale delivery (acked already, or whose lease expired and was handed out again): a stale delivery is
    ignored by `ack`, `nack` and `dead_letter`.

    Attributes:
        id: Identifies the message within its topic, stable across redeliveries, the DLQ and replay.
        topic: Topic the message was consumed from.
        payload: What was published; the in-memory backend hands out the very object, others a decoded copy.
        key: Partition key given at publish, or `None`.
        priority: Lane the message was published to (higher is handed out first).
        attempt: 1 on the first delivery, +1 on every nack or expired lease, 1 again after a replay.
        created: Wall-clock time (epoch seconds) when the message was first published.
        prior_attempts: Attempts the message had used before its last replay from the DLQ (0: never
            replayed), so that `prior_attempts + attempt` keeps rising across replays (its `Fence`).

    Example:
        >>> d = Delivery("7", "fetch", {"url": "https://example.com/"}, None, 0, 1, 1767225600.0)
        >>> d.attempt, d.payload["url"]
        (1, 'https://example.com/')
    """

    id: str
    topic: str
    payload: object
    key: str | None
    priority: int
    attempt: int
    created: float
    _lease: int = 0
    prior_attempts: int = 0


class DeadLetter(msgspec.Struct, frozen=True):
    """A message in a topic's dead-letter queue: it stays there, readable, until it is replayed.

    Attributes:
        id: The message id (as its deliveries had).
        topic: Topic the message belongs to (and goes back to on replay).
        payload: The payload; raw `bytes` if a durable backend could no longer decode it.
        key: Partition key, or `None`.
        attempt: Attempt number of the delivery that failed.
        reason: Why it was dead-lettered (the `reason` given, or what the backend observed).
        failed_at: Wall-clock time (epoch seconds) when it was dead-lettered.
        priority: Lane the message goes back to on replay.
        created: Wall-clock time (epoch seconds) when the message was first published.

    Example:
        >>> DeadLetter("7", "fetch", "payload", None, 5, "HTTP 503 after 5 attempts", 1767225600.0).reason
        'HTTP 503 after 5 attempts'
    """

    id: str
    topic: str
    payload: object
    key: str | None
    attempt: int
    reason: str
    failed_at: float
    priority: int = 0
    created: float = 0.0
