"""Member liveness: each open plane proposes a `Heartbeat` every `heartbeat_interval` seconds.

A member is *live* while its last heartbeat (or join) is less than `member_ttl` seconds old on the
reader's clock (`Member.is_live`). Partition ownership and member counts follow the live members, so
the partitions of a member that died (killed, cut off, or closed without `remove`) move to the others
once its TTL has passed, while `members()` keeps listing it until it is removed.
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING

import anyio
import msgspec

from ._commands import Heartbeat
from ._errors import ClusterUnavailable

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from ._commands import Command

__all__ = ("Liveness", "send_heartbeats")

logger = logging.getLogger(__name__)


class Liveness(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How often a member proves it is alive, and how long it counts as live without proof.

    Attributes:
        heartbeat_interval: Seconds between two `Heartbeat` commands of an open plane.
        member_ttl: A member whose last heartbeat is this many seconds old (on the reader's clock)
            is not live: it owns no partitions and is not counted. Keep it several intervals long,
            plus the clock skew between hosts.

    Example:
        >>> Liveness().member_ttl
        5.0
        >>> Liveness(heartbeat_interval=2.0, member_ttl=3.0)
        Traceback (most recent call last):
        ...
        ValueError: member_ttl (3.0) must be at least 2 heartbeat intervals (4)
    """

    heartbeat_interval: float = 1.0
    member_ttl: float = 5.0

    def __post_init__(self) -> None:
        for name in ("heartbeat_interval", "member_ttl"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 < value < math.inf):
                raise ValueError(f"{name} must be a finite number of seconds > 0, got {value!r}")
        if self.member_ttl < 2 * self.heartbeat_interval:
            raise ValueError(
                f"member_ttl ({self.member_ttl}) must be at least 2 heartbeat intervals "
                f"({2 * self.heartbeat_interval:g})"
            )


async def send_heartbeats(
    propose: Callable[[Command], Awaitable[object]],
    member_id: str,
    clock: Callable[[], float],
    interval: float,
) -> None:
    """Propose `Heartbeat(member_id, clock())` every `interval` seconds until cancelled.

    A heartbeat that cannot be committed now (`ClusterUnavailable`: no quorum, an election) is
    skipped; the next one tries again. A member that was removed stays removed (a heartbeat does not
    re-add it).
    """
    while True:
        await anyio.sleep(interval)
        try:
            await propose(Heartbeat(member_id=member_id, now=clock()))
        except ClusterUnavailable as exc:
            logger.debug("heartbeat of %s not committed: %s", member_id, exc)
