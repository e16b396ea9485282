"""`StateMachine`: the one deterministic state machine behind every control plane.

`apply(command)` is a pure function of the stored state and the command: it never reads the clock,
randomness or anything outside its `StateStore`, and it never raises for a well-typed command (odd
values are handled deterministically; the planes validate arguments before proposing). So a Raft
follower replaying the log, a node restoring a snapshot and the local LMDB plane all reach the same
state. Layout of the store (keys are UTF-8, integers in msgpack):

```text
k/<key>                  -> Entry(value, expires)           KV values (a counter: ASCII decimal)
n/<key>                  -> list length                      lists (a key holds a value or a list)
i/<key> NUL <index u64>  -> element                          list elements, from index 0
s/<key> NUL <member>     -> b""                              sets (their own name space, never expire)
c/<key>                  -> set size
l/<key>                  -> LockInfo(holder, token, expires) latest grant of each lock
p/<partition>            -> LockInfo                         latest grant of each partition lease
m/<member id>            -> Member
h/<topic>                -> TopicHead(first, next)           kept window of the topic's log
q/<topic> NUL <seq u64>  -> Message
meta/fence               -> the last fencing token handed out (one counter for locks and partitions)
meta/applied             -> how many commands were applied
```
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

if TYPE_CHECKING:
    from ._commands import Command
    from ._store import StateStore

__all__ = ("Result", "StateMachine")

Result: TypeAlias = int | bool | None
"""What `apply` returns: a token, a sequence number, a success flag, or None (see each command)."""

_FENCE = b"meta/fence"
_APPLIED = b"meta/applied"
_encode = msgspec.msgpack.encode
_entry = msgspec.msgpack.Decoder(Entry).decode
_lock = msgspec.msgpack.Decoder(LockInfo).decode
_member = msgspec.msgpack.Decoder(Member).decode
_message = msgspec.msgpack.Decoder(Message).decode
_head = msgspec.msgpack.Decoder(TopicHead).decode
_int = msgspec.msgpack.Decoder(int).decode
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _value_key(key: str) -> bytes:
    return b"k/" + key.encode()


def _lock_key(key: str) -> bytes:
    return b"l/" + key.encode()


def _partition_key(partition: int) -> bytes:
    return b"p/%d" % partition


def _member_key(member_id: str) -> bytes:
    return b"m/" + member_id.encode()


def _head_key(topic: str) -> bytes:
    return b"h/" + topic.encode()


def _message_key(topic: str, seq: int) -> bytes:
    return b"q/" + topic.encode() + b"\0" + _encode(seq)


def _length_key(key: str) -> bytes:
    return b"n/" + key.encode()


def _items_prefix(key: str) -> bytes:
    return b"i/" + key.encode() + b"\0"


def _set_prefix(key: str) -> bytes:
    return b"s/" + key.encode() + b"\0"


def _size_key(key: str) -> bytes:
    return b"c/" + key.encode()


def parse_counter(value: bytes) -> int | None:
    """Return the counter `value` holds, or None if it is not one (see `Incr`).

    Example:
        >>> parse_counter(b"-41"), parse_counter(b"01"), parse_counter(b"x")
        (-41, None, None)
    """
    if len(value) > 20:
        return None
    try:
        number = int(value)
    except ValueError:
        return None
    return number if str(number).encode() == value else None


class StateMachine:
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

    def __init__(self, store: StateStore) -> None:
        self._store = store

    @property
    def store(self) -> StateStore:
        """The store holding the state."""
        return self._store

    # ------------------------------------------------------------------ writes

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
            store.put(_APPLIED, _encode(self._counter(_APPLIED) + 1))
        return result

    def _dispatch(self, command: Command) -> Result:
        match command:
            case Set():
                self._drop_list(command.key)
                self._put_value(command.key, command.value, command.now, command.ttl)
                return None
            case Delete():
                live = self._live_value(command.key, command.now) is not None
                self._store.delete(_value_key(command.key))
                return self._drop_list(command.key) or live
            case CompareAndSet():
                return self._compare_and_set(command)
            case AcquireLock():
                return self._acquire(_lock_key(command.key), command.holder, command.ttl, command.now)
            case RenewLock():
                key = _lock_key(command.key)
                return self._renew(key, command.holder, command.token, command.ttl, command.now)
            case ReleaseLock():
                return self._release(_lock_key(command.key), command.holder, command.token)
            case AcquirePartition():
                key = _partition_key(command.partition)
                return self._acquire(key, command.holder, command.ttl, command.now)
            case RenewPartition():
                key = _partition_key(command.partition)
                return self._renew(key, command.holder, command.token, command.ttl, command.now)
            case ReleasePartition():
                return self._release(_partition_key(command.partition), command.holder, command.token)
            case Join():
                return self._join(command)
            case Remove():
                return self._store.delete(_member_key(command.member_id))
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

    def _counter(self, key: bytes) -> int:
        raw = self._store.get(key)
        return 0 if raw is None else _int(raw)

    def _live_value(self, key: str, now: float) -> bytes | None:
        raw = self._store.get(_value_key(key))
        if raw is None:
            return None
        entry = _entry(raw)
        if entry.expires is not None and entry.expires <= now:
            return None
        return entry.value

    def _put_value(self, key: str, value: bytes, now: float, ttl: float | None) -> None:
        expires = None if ttl is None else now + ttl
        self._store.put(_value_key(key), _encode(Entry(value, expires)))

    def _compare_and_set(self, command: CompareAndSet) -> bool:
        if self._length(command.key) or self._live_value(command.key, command.now) != command.expected:
            return False
        if command.value is None:
            self._store.delete(_value_key(command.key))
        else:
            self._put_value(command.key, command.value, command.now, command.ttl)
        return True

    def _acquire(self, key: bytes, holder: str, ttl: float, now: float) -> int | None:
        raw = self._store.get(key)
        if raw is not None:
            current = _lock(raw)
            if current.is_live(now) and current.holder != holder:
                return None
        token = self._counter(_FENCE) + 1
        self._store.put(_FENCE, _encode(token))
        self._store.put(key, _encode(LockInfo(holder=holder, token=token, expires=now + ttl)))
        return token

    def _granted(self, key: bytes, holder: str, token: int) -> LockInfo | None:
        raw = self._store.get(key)
        if raw is None:
            return None
        current = _lock(raw)
        return current if (current.holder, current.token) == (holder, token) else None

    def _renew(self, key: bytes, holder: str, token: int, ttl: float, now: float) -> bool:
        # Renewing past expiry is safe while nobody acquired since: no newer token exists for it.
        if self._granted(key, holder, token) is None:
            return False
        self._store.put(key, _encode(LockInfo(holder=holder, token=token, expires=now + ttl)))
        return True

    def _release(self, key: bytes, holder: str, token: int) -> bool:
        if self._granted(key, holder, token) is None:
            return False
        self._store.delete(key)
        return True

    def _join(self, command: Join) -> bool:
        key = _member_key(command.member_id)
        raw = self._store.get(key)
        joined = command.now if raw is None else _member(raw).joined
        member = Member(
            member_id=command.member_id,
            addr=command.addr,
            voter=command.voter,
            joined=joined,
            seen=command.now,
        )
        self._store.put(key, _encode(member))
        return raw is None

    def _heartbeat(self, command: Heartbeat) -> bool:
        key = _member_key(command.member_id)
        raw = self._store.get(key)
        if raw is None:
            return False
        member = _member(raw)
        if command.now > member.seen:  # never moves back (proposers' clocks differ)
            self._store.put(key, _encode(msgspec.structs.replace(member, seen=command.now)))
        return True

    def _publish(self, command: Publish) -> int:
        head_key = _head_key(command.topic)
        raw = self._store.get(head_key)
        head = TopicHead(1, 1) if raw is None else _head(raw)
        seq = head.next
        message = Message(topic=command.topic, seq=seq, payload=command.payload, published=command.now)
        self._store.put(_message_key(command.topic, seq), _encode(message))
        first = head.first
        while seq + 1 - first > max(command.keep, 1):
            self._store.delete(_message_key(command.topic, first))
            first += 1
        self._store.put(head_key, _encode(TopicHead(first, seq + 1)))
        return seq

    def _purge(self, now: float) -> int:
        dropped = 0
        for key, raw in self._store.scan(b"k/"):
            expires = _entry(raw).expires
            if expires is not None and expires <= now:
                self._store.delete(key)
                dropped += 1
        return dropped

    def _length(self, key: str) -> int:
        return self._counter(_length_key(key))

    def _drop_list(self, key: str) -> bool:
        if not self._store.delete(_length_key(key)):
            return False
        for item_key, _ in self._store.scan(_items_prefix(key)):
            self._store.delete(item_key)
        return True

    def _incr(self, command: Incr) -> int | None:
        if self._length(command.key):
            return None
        raw = self._store.get(_value_key(command.key))
        current, expires = 0, None
        if raw is not None:
            entry = _entry(raw)
            if entry.expires is None or entry.expires > command.now:
                found = parse_counter(entry.value)
                if found is None:
                    return None
                current, expires = found, entry.expires
        new = current + command.delta
        if not _INT64_MIN <= new <= _INT64_MAX:
            return None
        self._store.put(_value_key(command.key), _encode(Entry(str(new).encode(), expires)))
        return new

    def _append(self, command: Append) -> int | None:
        if self._live_value(command.key, command.now) is not None:
            return None
        self._store.delete(_value_key(command.key))  # an expired value, if any
        index = self._length(command.key)
        self._store.put(_items_prefix(command.key) + _encode(index), command.value)
        self._store.put(_length_key(command.key), _encode(index + 1))
        return index + 1

    def _add_if_absent(self, command: AddIfAbsent) -> int:
        prefix = _set_prefix(command.key)
        mask = added = 0
        for index, member in enumerate(command.members):
            key = prefix + member
            if self._store.get(key) is None:
                self._store.put(key, b"")
                mask |= 1 << index
                added += 1
        if added:
            size_key = _size_key(command.key)
            self._store.put(size_key, _encode(self._counter(size_key) + added))
        return mask

    # ------------------------------------------------------------------ reads

    @property
    def applied(self) -> int:
        """How many commands were applied (kept in the state, so snapshots and restarts keep it)."""
        with self._store.transaction(write=False):
            return self._counter(_APPLIED)

    @property
    def fence(self) -> int:
        """The last fencing token handed out (0 before the first)."""
        with self._store.transaction(write=False):
            return self._counter(_FENCE)

    def get(self, key: str, now: float) -> bytes | None:
        """Return the live value of `key` at `now`, or None."""
        with self._store.transaction(write=False):
            return self._live_value(key, now)

    def lock(self, key: str, now: float) -> LockInfo | None:
        """Return the live grant of lock `key` at `now`, or None."""
        return self._live_grant(_lock_key(key), now)

    def partition_lease(self, partition: int, now: float) -> LockInfo | None:
        """Return the live lease of `partition` at `now`, or None."""
        return self._live_grant(_partition_key(partition), now)

    def _live_grant(self, key: bytes, now: float) -> LockInfo | None:
        with self._store.transaction(write=False):
            raw = self._store.get(key)
        if raw is None:
            return None
        grant = _lock(raw)
        return grant if grant.is_live(now) else None

    def members(self) -> list[Member]:
        """Return every member, ordered by id."""
        with self._store.transaction(write=False):
            return [_member(raw) for _, raw in self._store.scan(b"m/")]

    def live_members(self, now: float, ttl: float) -> list[Member]:
        """Return the members seen less than `ttl` seconds before `now`, ordered by id.

        Example:
            >>> from mocra_cluster import MemoryStateStore
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
            raw = self._store.get(_member_key(member_id))
        return None if raw is None else _member(raw)

    def last_seq(self, topic: str) -> int:
        """Return the sequence number of the last message of `topic` (0 if none)."""
        with self._store.transaction(write=False):
            raw = self._store.get(_head_key(topic))
        return 0 if raw is None else _head(raw).next - 1

    def messages(self, topic: str, after: int = 0, limit: int = 100) -> list[Message]:
        """Return up to `limit` kept messages of `topic` with sequence numbers above `after`, in order.

        Messages trimmed from the log are skipped: a gap in `seq` shows how many were missed.
        """
        with self._store.transaction(write=False):
            raw = self._store.get(_head_key(topic))
            if raw is None:
                return []
            head = _head(raw)
            start = max(after + 1, head.first)
            found = []
            for seq in range(start, min(head.next, start + max(limit, 0))):
                stored = self._store.get(_message_key(topic, seq))
                if stored is not None:
                    found.append(_message(stored))
            return found

    def items(self, key: str, now: float) -> list[bytes] | None:
        """Return the list `key` in append order ([] if missing), or None if it holds a value at `now`."""
        with self._store.transaction(write=False):
            if not self._length(key):
                return None if self._live_value(key, now) is not None else []
            return [value for _, value in self._store.scan(_items_prefix(key))]

    def set_contains(self, key: str, member: bytes) -> bool:
        """Return whether `member` was added to the set `key`."""
        with self._store.transaction(write=False):
            return self._store.get(_set_prefix(key) + member) is not None

    def set_size(self, key: str) -> int:
        """Return how many members the set `key` holds."""
        with self._store.transaction(write=False):
            return self._counter(_size_key(key))
