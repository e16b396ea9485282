"""`StateView`: the reads of the replicated state (what the control planes ask `StateMachine`).

Each read runs in a read transaction of the `StateStore`; time enters only through `now` (epoch seconds).
The keys are laid out as `_state_layout.py` draws them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._state_layout import (
    APPLIED,
    FENCE,
    decode_entry,
    decode_head,
    decode_int,
    decode_lock,
    decode_member,
    decode_message,
    head_key,
    items_prefix,
    length_key,
    lock_key,
    member_key,
    message_key,
    partition_key,
    set_prefix,
    size_key,
    value_key,
)

if TYPE_CHECKING:
    from ._records import LockInfo, Member, Message
    from ._store import StateStore

__all__ = ("StateView",)


class StateView:
    """The state in `store`, read: KV values, locks, members, partition leases, topic logs, lists and sets.

    `StateMachine` is a `StateView` that also applies commands.
    """

    def __init__(self, store: StateStore) -> None:
        self._store = store

    @property
    def store(self) -> StateStore:
        """The store holding the state."""
        return self._store

    def _counter(self, key: bytes) -> int:
        raw = self._store.get(key)
        return 0 if raw is None else decode_int(raw)

    def _live_value(self, key: str, now: float) -> bytes | None:
        raw = self._store.get(value_key(key))
        if raw is None:
            return None
        entry = decode_entry(raw)
        if entry.expires is not None and entry.expires <= now:
            return None
        return entry.value

    def _length(self, key: str) -> int:
        return self._counter(length_key(key))

    @property
    def applied(self) -> int:
        """How many commands were applied (kept in the state, so snapshots and restarts keep it)."""
        with self._store.transaction(write=False):
            return self._counter(APPLIED)

    @property
    def fence(self) -> int:
        """The last fencing token handed out (0 before the first)."""
        with self._store.transaction(write=False):
            return self._counter(FENCE)

    def get(self, key: str, now: float) -> bytes | None:
        """Return the live value of `key` at `now`, or None."""
        with self._store.transaction(write=False):
            return self._live_value(key, now)

    def lock(self, key: str, now: float) -> LockInfo | None:
        """Return the live grant of lock `key` at `now`, or None."""
        return self._live_grant(lock_key(key), now)

    def partition_lease(self, partition: int, now: float) -> LockInfo | None:
        """Return the live lease of `partition` at `now`, or None."""
        return self._live_grant(partition_key(partition), now)

    def _live_grant(self, key: bytes, now: float) -> LockInfo | None:
        with self._store.transaction(write=False):
            raw = self._store.get(key)
        if raw is None:
            return None
        grant = decode_lock(raw)
        return grant if grant.is_live(now) else None

    def members(self) -> list[Member]:
        """Return every member, ordered by id."""
        with self._store.transaction(write=False):
            return [decode_member(raw) for _, raw in self._store.scan(b"m/")]

    def live_members(self, now: float, ttl: float) -> list[Member]:
        """Return the members seen less than `ttl` seconds before `now`, ordered by id.

        Example:
            >>> from mocra_cluster import Heartbeat, Join, MemoryStateStore, StateMachine
            >>> machine = StateMachine(MemoryStateStore())
            >>> for member in ("a", "b"):
            ...     _ = machine.apply(Join(member_id=member, addr="local", voter=True, now=100.0))
            >>> machine.apply(Heartbeat(member_id="a", now=104.0))
            True
            >>> [m.member_id for m in machine.live_members(now=106.0, ttl=5.0)]
            ['a']
        """
        return [member for member in self.members() if member.is_live(now, ttl)]

    def member(self, member_id: str) -> Member | None:
        """Return member `member_id`, or None."""
        with self._store.transaction(write=False):
            raw = self._store.get(member_key(member_id))
        return None if raw is None else decode_member(raw)

    def last_seq(self, topic: str) -> int:
        """Return the sequence number of the last message of `topic` (0 if none)."""
        with self._store.transaction(write=False):
            raw = self._store.get(head_key(topic))
        return 0 if raw is None else decode_head(raw).next - 1

    def messages(self, topic: str, after: int = 0, limit: int = 100) -> list[Message]:
        """Return up to `limit` kept messages of `topic` with sequence numbers above `after`, in order.

        Messages trimmed from the log are skipped: a gap in `seq` shows how many were missed.
        """
        with self._store.transaction(write=False):
            raw = self._store.get(head_key(topic))
            if raw is None:
                return []
            head = decode_head(raw)
            start = max(after + 1, head.first)
            found = []
            for seq in range(start, min(head.next, start + max(limit, 0))):
                stored = self._store.get(message_key(topic, seq))
                if stored is not None:
                    found.append(decode_message(stored))
            return found

    def items(self, key: str, now: float) -> list[bytes] | None:
        """Return the list `key` in append order ([] if missing), or None if it holds a value at `now`."""
        with self._store.transaction(write=False):
            if not self._length(key):
                return None if self._live_value(key, now) is not None else []
            return [value for _, value in self._store.scan(items_prefix(key))]

    def set_contains(self, key: str, member: bytes) -> bool:
        """Return whether `member` was added to the set `key`."""
        with self._store.transaction(write=False):
            return self._store.get(set_prefix(key) + member) is not None

    def set_size(self, key: str) -> int:
        """Return how many members the set `key` holds."""
        with self._store.transaction(write=False):
            return self._counter(size_key(key))
