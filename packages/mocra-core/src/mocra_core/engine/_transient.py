"""Failures that mean the job's shared state is out of reach for a moment: the work is retried, not buried.

A seen set, coordination store or broker that does not answer (a Redis restart, a Raft election after a
node died) fails the stage that needed it with one of `TRANSIENT`; the stage hands its input back with a
delay (`retry_later`) instead of sending it to the dead-letter queue, and the queue's `max_attempts` still
bounds how often.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from .._errors import BackendError
from ..coordination import CoordinationError
from ..dedup import SeenSetError

if TYPE_CHECKING:
    from ..observe import Stats
    from ..queue import Delivery, QueueBackend

__all__ = ("RETRY_DELAY", "TRANSIENT", "retry_later")

logger = logging.getLogger(__name__)

TRANSIENT: tuple[type[Exception], ...] = (BackendError, CoordinationError, SeenSetError)
"""The errors `retry_later` handles."""
RETRY_DELAY = 1.0
"""Seconds before a delivery that met a `TRANSIENT` error comes back."""


async def retry_later(queue: QueueBackend, delivery: Delivery, exc: Exception, stats: Stats) -> None:
    """Hand `delivery` back for a later attempt because the shared state was out of reach (`exc`).

    If the broker does not take it back either, it stays leased and comes back when its lease expires.
    """
    stats.retries += 1
    logger.warning(
        "%s (attempt %d): retrying in %.0f s: %s", delivery.topic, delivery.attempt, RETRY_DELAY, exc
    )
    try:
        await queue.nack(delivery, delay=RETRY_DELAY, reason=f"shared state out of reach: {exc}")
    except TRANSIENT as again:  # the broker itself is out of reach: the lease runs out instead
        logger.warning(
            "%s: not handed back (%s): it comes back when its lease expires", delivery.topic, again
        )
