"""The records the state machine keeps and hands back to readers (frozen msgspec Structs)."""

from __future__ import annotations

import msgspec

__all__ = ("Entry", "LockInfo", "Member", "Message", "TopicHead")


class Entry(msgspec.Struct, frozen=True, array_like=True):
    """A stored value; `expires` is epoch seconds or None (never)."""

    value: bytes
    expires: float | None


class LockInfo(msgspec.Struct, frozen=True, kw_only=True, array_like=True):
    """The latest grant of a lock or partition lease.

    Attributes:
        holder: Who holds it.
        token: Its fencing token (from the one global counter).
        expires: When it lapses unless renewed, in epoch seconds.

    Example:
        >>> LockInfo(holder="a", token=3, expires=40.0).is_live(now=39.9)
        True
    """

    holder: str
    token: int
    expires: float

    def is_live(self, now: float) -> bool:
        """Whether the grant still holds at `now` (epoch seconds)."""
        return now < self.expires


class Member(msgspec.Struct, frozen=True, kw_only=True, array_like=True):
    """A member of the cluster.

    Attributes:
        member_id: Its unique id.
        addr: Where it listens (`host:port` for Raft; free-form for the local plane).
        voter: Whether it votes (False: a learner that replicates but does not count for quorum).
        joined: When it joined, epoch seconds.
        seen: When it last joined or sent a heartbeat (its last sign of life), epoch seconds.

    Example:
        >>> member = Member(member_id="a", addr="local", voter=True, joined=10.0, seen=20.0)
        >>> member.is_live(now=24.9, ttl=5.0), member.is_live(now=25.0, ttl=5.0)
        (True, False)
    """

    member_id: str
    addr: str
    voter: bool
    joined: float
    seen: float

    def is_live(self, now: float, ttl: float) -> bool:
        """Whether its last sign of life is less than `ttl` seconds before `now` (epoch seconds)."""
        return now - self.seen < ttl


class Message(msgspec.Struct, frozen=True, kw_only=True, array_like=True):
    """A published message.

    Attributes:
        topic: The topic it was published to.
        seq: Its sequence number in the topic (1, 2, 3, ...; never reused).
        payload: The bytes published.
        published: When it was published, epoch seconds.
    """

    topic: str
    seq: int
    payload: bytes
    published: float


class TopicHead(msgspec.Struct, frozen=True, array_like=True):
    """The kept window of a topic's log: sequences `first` up to `next - 1`."""

    first: int
    next: int
