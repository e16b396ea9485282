"""Partitions of the key space and their owners by rendezvous (highest random weight) hashing.

A key belongs to one of `PARTITIONS` partitions by a stable hash; a partition belongs to the member
with the highest hash of `(partition, member)`. When a member joins it takes only the partitions it now
scores highest on (about `1/n` of them) and nothing moves between the others; when one leaves only its
partitions move. Everything here is pure and deterministic (blake2b, never Python's salted `hash`).

Example:
    >>> partition_of("orders/42")
    44
    >>> owner(44, ["a", "b", "c"])
    'b'
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ("PARTITIONS", "assignment", "owned_partitions", "owner", "partition_of")

PARTITIONS = 256
"""How many partitions the key space is cut into."""


def _hash64(data: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")


def partition_of(key: str | bytes) -> int:
    """Return the partition (0 to `PARTITIONS - 1`) of `key`; the same on every node and run.

    Example:
        >>> partition_of("a") == partition_of(b"a")
        True
    """
    raw = key.encode() if isinstance(key, str) else key
    return _hash64(raw) % PARTITIONS


def _score(partition: int, member: str) -> tuple[int, str]:
    return _hash64(b"%d\0" % partition + member.encode()), member


def owner(partition: int, members: Iterable[str]) -> str | None:
    """Return the member owning `partition` among `members`, or None if there are none.

    Raises:
        ValueError: `partition` is outside 0 to `PARTITIONS - 1`.

    Example:
        >>> owner(0, []) is None, owner(0, ["solo"])
        (True, 'solo')
    """
    if not 0 <= partition < PARTITIONS:
        raise ValueError(f"partition must be 0 to {PARTITIONS - 1}, got {partition!r}")
    best = max((_score(partition, member) for member in members), default=None)
    return None if best is None else best[1]


def assignment(members: Iterable[str]) -> dict[int, str]:
    """Return the owner of every partition (empty when there are no members).

    Example:
        >>> owners = assignment(["a", "b"])
        >>> len(owners), sorted(set(owners.values()))
        (256, ['a', 'b'])
    """
    unique = sorted(set(members))
    if not unique:
        return {}
    return {partition: owner(partition, unique) or "" for partition in range(PARTITIONS)}


def owned_partitions(member: str, members: Iterable[str]) -> list[int]:
    """Return the partitions `member` owns among `members` (itself included or not), in order.

    Example:
        >>> mine = owned_partitions("a", ["a", "b", "c"])
        >>> 50 < len(mine) < 120
        True
    """
    return [partition for partition, found in assignment(members).items() if found == member]
