"""`Ownership`: which node of a cluster does the work of a key (a module's account, a cron fire).

`SingleNodeOwnership` is one node's; `ControlPlaneOwnership` (a `mocra_cluster` control plane's) lives with
the cluster backend, in `mocra_core.backends.cluster`.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ("Ownership", "SingleNodeOwnership")


class Ownership(Protocol):
    """Splits keyed work between the members of a cluster: each key belongs to exactly one member.

    The engine asks it which accounts' cron fires this node queues (`owns`), how many members share
    per-domain politeness when there is no job-wide gate (`member_count`) and which queue partition
    key keeps an account's work in one lane (`partition_key`).

    Ownership follows the membership: when members join or leave, keys move (by rendezvous hashing,
    only the keys of the joining or leaving member). Two nodes may therefore briefly both believe they
    own a key, so work that must not be doubled also takes a marker in the coordination store (the
    engine's cron does).
    """

    async def owns(self, key: str) -> bool:
        """Return whether this node does the work of `key` now."""
        ...

    async def member_count(self) -> int:
        """Return how many members share the work (at least 1)."""
        ...

    def partition_key(self, key: str) -> str | None:
        """Return the queue partition key for the work of `key`, or None for no affinity."""
        ...


class SingleNodeOwnership:
    """One node doing all the work: it owns every key and is the only member.

    Example:
        >>> import anyio
        >>> solo = SingleNodeOwnership()
        >>> anyio.run(solo.owns, "shop:alice"), anyio.run(solo.member_count), solo.partition_key("x")
        (True, 1, None)
    """

    async def owns(self, key: str) -> bool:
        """Return True: a single node owns everything."""
        return True

    async def member_count(self) -> int:
        """Return 1."""
        return 1

    def partition_key(self, key: str) -> str | None:
        """Return None: with one node there is no lane to keep work in."""
        return None

    def __repr__(self) -> str:
        return "SingleNodeOwnership()"
