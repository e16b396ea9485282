"""`StateMachine`: the one deterministic state machine behind every control plane.

`apply(command)` is a pure function of the stored state and the command: it never reads the clock,
randomness or anything outside its `StateStore`, and it never raises for a well-typed command (odd
values are handled deterministically; the planes validate arguments before proposing). So a Raft
follower replaying the log, a node restoring a snapshot and the local LMDB plane all reach the same
state. The reads are `StateView`'s; the layout of the store is drawn in `_state_layout.py`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

import msgspec

from ._commands import (
    AcquireLock,
    AcquirePartition,
    AddIfAbsent,
    Append,
    CompareAndSet,
    Delete,
    Heartbeat,
    Incr,
    Join,
    Publish,
    Purge,
    ReleaseLock,
    ReleasePartition,
    Remove,
    RenewLock,
    RenewPartition,
    Set,
    decode_command,
)
from ._records import Entry, LockInfo, Member, Message, TopicHead
from ._state_layout import (
    APPLIED,
    FENCE,
    INT64_MAX,
    INT64_MIN,
    decode_entry,
    decode_head,
    decode_lock,
    decode_member,
    encode,
    head_key,
    items_prefix,
    length_key,
    lock_key,
    member_key,
    message_key,
    parse_counter,
    partition_key,
    set_prefix,
    size_key,
    value_key,
)
from ._state_view import StateView

if TYPE_CHECKING:
    from ._commands import Command

__all__ = ("Result", "StateMachine", "parse_counter")

Result: TypeAlias = int | bool | None
"""What `apply` returns: a token, a sequence number, a success flag, or None (see each command)."""


class StateMachine(StateView):
    """The replicated state: KV with expiry, fenced locks, membership, partition leases, topic logs.

    Time enters only through the `now` of the commands and of the read methods (epoch seconds).

    Example:
        >>> from mocra_cluster import MemoryStateStore
        >>> machine = StateMachine(MemoryStateStore())
        >>> machine.apply(AcquireLock(key="job", holder="a", ttl=10, now=100.0))
        1
        >>> machine.apply(AcquireLock(key="job", holder="b", ttl=10, now=105.0))  # held by a
        >>> machine.apply(AcquireLock(key="job", holder="b", ttl=10, now=111.0))  # a's lease expired
        2
        >>> machine.lock("job", now=112.0)
        LockInfo(holder='b', token=2, expires=121.0)
        >>> machine.applied
        3
    """

    def apply_bytes(self, data: bytes) -> Result:
        """Decode a command encoded by `encode_command` and apply it.

        Raises:
            msgspec.DecodeError: `data` is not a command; nothing changed.
        """
        return self.apply(decode_command(data))

    def apply(self, command: Command) -> Result:
        """Apply `command` in one write transaction and return its result.

        Results: `Set` None; `Delete` whether a live value was removed; `CompareAndSet`, `RenewLock`,
        `ReleaseLock`, `RenewPartition`, `ReleasePartition`, `Heartbeat`, `Remove` whether they took
        effect; `Join` whether the member is new; `AcquireLock`, `AcquirePartition` the new fencing token
        or None; `Publish` the message's sequence number; `Purge` how many values it dropped.
        """
        store = self._store
        with store.transaction(write=True):
            result = self._dispatch(command)
            store.put(APPLIED, encode(self._counter(APPLIED) + 1))
        return result

    def _dispatch(self, command: Command) -> Result:
        match command:
            case Set():
                self._drop_list(command.key)
                self._put_value(command.key, command.value, command.now, command.ttl)
                return None
            case Delete():
                live = self._live_value(command.key, command.now) is not None
                self._store.delete(value_key(command.key))
                return self._drop_list(command.key) or live
            case CompareAndSet():
                return self._compare_and_set(command)
            case AcquireLock():
                return self._acquire(lock_key(command.key), command.holder, command.ttl, command.now)
            case RenewLock():
                key = lock_key(command.key)
                return self._renew(key, command.holder, command.token, command.ttl, command.now)
            case ReleaseLock():
                return self._release(lock_key(command.key), command.holder, command.token)
            case AcquirePartition():
                key = partition_key(command.partition)
                return self._acquire(key, command.holder, command.ttl, command.now)
            case RenewPartition():
                key = partition_key(command.partition)
                return self._renew(key, command.holder, command.token, command.ttl, command.now)
            case ReleasePartition():
                return self._release(partition_key(command.partition), command.holder, command.token)
            case Join():
                return self._join(command)
            case Remove():
                return self._store.delete(member_key(command.member_id))
            case Heartbeat():
                return self._heartbeat(command)
            case Publish():
                return self._publish(command)
            case Purge():
                return self._purge(command.now)
            case Incr():
                return self._incr(command)
            case Append():
                return self._append(command)
            case AddIfAbsent():
                return self._add_if_absent(command)

    def _put_value(self, key: str, value: bytes, now: float, ttl: float | None) -> None:
        expires = None if ttl is None else now + ttl
        self._store.put(value_key(key), encode(Entry(value, expires)))

    def _compare_and_set(self, command: CompareAndSet) -> bool:
        if self._length(command.key) or self._live_value(command.key, command.now) != command.expected:
            return False
        if command.value is None:
            self._store.delete(value_key(command.key))
        else:
            self._put_value(command.key, command.value, command.now, command.ttl)
        return True

    def _acquire(self, key: bytes, holder: str, ttl: float, now: float) -> int | None:
        raw = self._store.get(key)
        if raw is not None:
            current = decode_lock(raw)
            if current.is_live(now) and current.holder != holder:
                return None
        token = self._counter(FENCE) + 1
        self._store.put(FENCE, encode(token))
        self._store.put(key, encode(LockInfo(holder=holder, token=token, expires=now + ttl)))
        return token

    def _granted(self, key: bytes, holder: str, token: int) -> LockInfo | None:
        raw = self._store.get(key)
        if raw is None:
            return None
        current = decode_lock(raw)
        return current if (current.holder, current.token) == (holder, token) else None

    def _renew(self, key: bytes, holder: str, token: int, ttl: float, now: float) -> bool:
        # Renewing past expiry is safe while nobody acquired since: no newer token exists for it.
        if self._granted(key, holder, token) is None:
            return False
        self._store.put(key, encode(LockInfo(holder=holder, token=token, expires=now + ttl)))
        return True

    def _release(self, key: bytes, holder: str, token: int) -> bool:
        if self._granted(key, holder, token) is None:
            return False
        self._store.delete(key)
        return True

    def _join(self, command: Join) -> bool:
        key = member_key(command.member_id)
        raw = self._store.get(key)
        joined = command.now if raw is None else decode_member(raw).joined
        member = Member(
            member_id=command.member_id,
            addr=command.addr,
            voter=command.voter,
            joined=joined,
            seen=command.now,
        )
        self._store.put(key, encode(member))
        return raw is None

    def _heartbeat(self, command: Heartbeat) -> bool:
        key = member_key(command.member_id)
        raw = self._store.get(key)
        if raw is None:
            return False
        member = decode_member(raw)
        if command.now > member.seen:  # never moves back (proposers' clocks differ)
            self._store.put(key, encode(msgspec.structs.replace(member, seen=command.now)))
        return True

    def _publish(self, command: Publish) -> int:
        head_at = head_key(command.topic)
        raw = self._store.get(head_at)
        head = TopicHead(1, 1) if raw is None else decode_head(raw)
        seq = head.next
        message = Message(topic=command.topic, seq=seq, payload=command.payload, published=command.now)
        self._store.put(message_key(command.topic, seq), encode(message))
        first = head.first
        while seq + 1 - first > max(command.keep, 1):
            self._store.delete(message_key(command.topic, first))
            first += 1
        self._store.put(head_at, encode(TopicHead(first, seq + 1)))
        return seq

    def _purge(self, now: float) -> int:
        dropped = 0
        for key, raw in self._store.scan(b"k/"):
            expires = decode_entry(raw).expires
            if expires is not None and expires <= now:
                self._store.delete(key)
                dropped += 1
        return dropped

    def _drop_list(self, key: str) -> bool:
        if not self._store.delete(length_key(key)):
            return False
        for item_key, _ in self._store.scan(items_prefix(key)):
            self._store.delete(item_key)
        return True

    def _incr(self, command: Incr) -> int | None:
        if self._length(command.key):
            return None
        raw = self._store.get(value_key(command.key))
        current, expires = 0, None
        if raw is not None:
            entry = decode_entry(raw)
            if entry.expires is None or entry.expires > command.now:
                found = parse_counter(entry.value)
                if found is None:
                    return None
                current, expires = found, entry.expires
        new = current + command.delta
        if not INT64_MIN <= new <= INT64_MAX:
            return None
        self._store.put(value_key(command.key), encode(Entry(str(new).encode(), expires)))
        return new

    def _append(self, command: Append) -> int | None:
        if self._live_value(command.key, command.now) is not None:
            return None
        self._store.delete(value_key(command.key))  # an expired value, if any
        index = self._length(command.key)
        self._store.put(items_prefix(command.key) + encode(index), command.value)
        self._store.put(length_key(command.key), encode(index + 1))
        return index + 1

    def _add_if_absent(self, command: AddIfAbsent) -> int:
        prefix = set_prefix(command.key)
        mask = added = 0
        for index, member in enumerate(command.members):
            key = prefix + member
            if self._store.get(key) is None:
                self._store.put(key, b"")
                mask |= 1 << index
                added += 1
        if added:
            size_at = size_key(command.key)
            self._store.put(size_at, encode(self._counter(size_at) + added))
        return mask
