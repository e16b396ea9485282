"""`Outage`: how long a worker's broker or shared store has been out of reach, and when to give up.

The stages' loops (leasing, acking, the end check, progress) do not fail when the broker or the
coordination store stops answering (a restart, a network cut, a failover): they note the failure here,
wait a moment and try again, so the run goes on once the service is back. Only an outage longer than
`crawl.outage_timeout` stops the run, in order, with `reason = "unavailable"`: what the worker holds
leased comes back to the job's other workers (or its next run) when the leases expire, so nothing is lost.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ("RETRY_EVERY", "Outage")

logger = logging.getLogger(__name__)

RETRY_EVERY = 0.5
"""Seconds between two tries of a call that met an outage (a backend call may itself wait seconds)."""
_REPORT_EVERY = 10.0  # seconds between two warnings of one outage


class Outage:
    """Tracks one worker's outage of its shared services: since when, and whether it lasted too long.

    Args:
        limit: Seconds of outage after which `over` is True (the run then stops).
        clock: Monotonic seconds (for tests).

    Example:
        >>> now = [0.0]
        >>> outage = Outage(30, clock=lambda: now[0])
        >>> outage.failed(TimeoutError("no reply"), "leasing requests")
        0.5
        >>> now[0] = 31.0
        >>> _ = outage.failed(TimeoutError("no reply"), "acking")
        >>> outage.over, outage.down_for
        (True, 31.0)
        >>> outage.recovered()
        >>> outage.down_for
        0.0
    """

    def __init__(self, limit: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self._clock = clock
        self._since: float | None = None  # first failure since the last success
        self._reported = 0.0
        self.over = False

    @property
    def down_for(self) -> float:
        """Seconds since the first failure of the current outage (0 when there is none)."""
        return 0.0 if self._since is None else self._clock() - self._since

    def failed(self, exc: BaseException, what: str) -> float:
        """Note that `what` failed with `exc`; returns the seconds to wait before trying again."""
        now = self._clock()
        if self._since is None:
            self._since = self._reported = now
            logger.warning("%s failed (%s); retrying until the service answers again", what, exc)
        elif now - self._reported >= _REPORT_EVERY:
            self._reported = now
            logger.warning("still out of reach after %.0f s: %s failed (%s)", now - self._since, what, exc)
        if now - self._since >= self.limit and not self.over:
            self.over = True
            logger.error(
                "out of reach for %.0f s (crawl.outage_timeout): stopping: %s", now - self._since, exc
            )
        return RETRY_EVERY

    def recovered(self) -> None:
        """Note that the services answered (an ack after a handled message, an end check): no outage."""
        if self._since is not None:
            logger.warning("reachable again after %.1f s", self._clock() - self._since)
            self._since = None
