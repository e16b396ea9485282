"""`CronClaims`: on a cluster, which start tasks of a cron fire this node queues."""

from __future__ import annotations

import hashlib
import logging
from typing import TYPE_CHECKING

from ...coordination import MAX_KEY_BYTES

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ...coordination import Coordination, Ownership
    from ...modules import Task

__all__ = ("MARKER_GRACE", "CronClaims", "owner_key")

logger = logging.getLogger(__name__)

MARKER_GRACE = 60.0
"""Seconds a fire's marker outlives the module's misfire tolerance (see `CronClaims`)."""


def owner_key(task: Task) -> str:
    """The ownership key of a start task: `module:account`, or the module name without accounts.

    Example:
        >>> from mocra_core.modules import Task
        >>> alice, anonymous = Task(module="shop", node="a", account="alice"), Task(module="news", node="a")
        >>> owner_key(alice), owner_key(anonymous)
        ('shop:alice', 'news')
    """
    return task.module if task.account is None else f"{task.module}:{task.account}"


def _marker(key: str, fire_time: float) -> str:
    marker = f"cron/{key}/{int(fire_time)}"
    if len(marker.encode()) <= MAX_KEY_BYTES:
        return marker
    return f"cron/#{hashlib.blake2b(key.encode(), digest_size=16).hexdigest()}/{int(fire_time)}"


class CronClaims:
    """Splits each cron fire between the members of a cluster, so each account is fired exactly once.

    Every node runs the module's cron. At a fire, a start task (one per account, one for a module
    without accounts) is queued by the node that owns its key (`owner_key`: `module:account`, or the
    module name) **and** first sets the marker `cron/<key>/<fire time>` in the coordination store
    (`set_if_absent`). The owner check spreads the accounts over the members; the marker keeps a fire
    from being doubled while ownership moves (a member joins or leaves between two nodes' checks, or
    their views of the membership differ for a moment). The marker lives `misfire_tolerance +
    MARKER_GRACE` seconds: past the tolerance no node fires that time any more.

    A member that dies stops its heartbeats; once its last one is older than the plane's member TTL
    (default 5 s) it is no longer live and its keys move to the others, from the next fire on. Its
    accounts' fires in between (within about the TTL of its death) are queued by nobody.

    Args:
        ownership: Who owns which key.
        coordination: The store the job's nodes share (holds the markers).

    Example:
        >>> import anyio
        >>> from mocra_core.coordination import LocalCoordination, SingleNodeOwnership
        >>> from mocra_core.modules import Task
        >>> claims = CronClaims(SingleNodeOwnership(), LocalCoordination())
        >>> tasks = [Task(module="shop", node="list", account=name) for name in ("alice", "bob")]
        >>> async def fire_twice() -> tuple[int, int]:
        ...     first = await claims.claim(tasks, 60.0, misfire_tolerance=60.0)
        ...     again = await claims.claim(tasks, 60.0, misfire_tolerance=60.0)  # another node, same fire
        ...     return len(first), len(again)
        >>> anyio.run(fire_twice)
        (2, 0)
    """

    __slots__ = ("_coordination", "_ownership")

    def __init__(self, ownership: Ownership, coordination: Coordination) -> None:
        self._ownership = ownership
        self._coordination = coordination

    async def claim(self, tasks: Sequence[Task], fire_time: float, *, misfire_tolerance: float) -> list[Task]:
        """Return the tasks of the fire at `fire_time` (epoch seconds) this node queues, in order."""
        ttl = misfire_tolerance + MARKER_GRACE
        mine: list[Task] = []
        for task in tasks:
            key = owner_key(task)
            if not await self._ownership.owns(key):
                continue
            if await self._coordination.set_if_absent(_marker(key, fire_time), ttl=ttl):
                mine.append(task)
            else:
                logger.debug("cron fire %s of %s was already queued by another node", fire_time, key)
        return mine
