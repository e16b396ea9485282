"""Failures that mean the job's shared state is out of reach for a moment: the work is retried, not buried.

A seen set, coordination store or broker that does not answer (a Redis restart, a Raft election after a
node died) fails the stage that needed it with one of `TRANSIENT`; the stage hands its input back with a
delay (`retry_later`) instead of sending it to the dead-letter queue, and the queue's `max_attempts` still
bounds how often. The delay doubles with each attempt (1 s, 2 s, 4 s, … at most 2 minutes), so a message
meets `max_attempts` (10 by default) only after ~6 minutes of outage, longer than a worker waits for its
services by default (`crawl.outage_timeout`, 300 s).
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
    from ._outage import Outage

__all__ = ("RETRY_DELAY", "RETRY_DELAY_MAX", "TRANSIENT", "retry_delay", "retry_later")

logger = logging.getLogger(__name__)

TRANSIENT: tuple[type[Exception], ...] = (BackendError, CoordinationError, SeenSetError)
"""The errors `retry_later` handles."""
RETRY_DELAY = 1.0
"""Seconds before a delivery that met a `TRANSIENT` error comes back, on its first attempt."""
RETRY_DELAY_MAX = 120.0
"""... on later attempts the delay doubles, up to this."""


def retry_delay(attempt: int) -> float:
    """Seconds before a delivery that met a `TRANSIENT` error on its `attempt`-th delivery comes back.

    Example:
        >>> [retry_delay(attempt) for attempt in (1, 2, 4, 8, 12)]
        [1.0, 2.0, 8.0, 120.0, 120.0]
    """
    return min(RETRY_DELAY_MAX, RETRY_DELAY * float(1 << min(max(attempt - 1, 0), 16)))


async def retry_later(
    queue: QueueBackend, delivery: Delivery, exc: Exception, stats: Stats, outage: Outage | None = None
) -> None:
    """Hand `delivery` back for a later attempt because the shared state was out of reach (`exc`).

    If the broker does not take it back either, it stays leased and comes back when its lease expires.
    The failure counts towards the run's `outage`, if given.
    """
    if outage is not None:
        outage.failed(exc, f"handling a {delivery.topic!r} message")
    stats.retries += 1
    delay = retry_delay(delivery.attempt)
    logger.warning("%s (attempt %d): retrying in %.0f s: %s", delivery.topic, delivery.attempt, delay, exc)
    try:
        await queue.nack(delivery, delay=delay, reason=f"shared state out of reach: {exc}")
    except TRANSIENT as again:  # the broker itself is out of reach: the lease runs out instead
        logger.warning(
            "%s: not handed back (%s): it comes back when its lease expires", delivery.topic, again
        )
