r"""`LmdbStore`: the on-disk layout behind `LmdbQueue` and the transactions that move messages between states.

One LMDB environment, eight sub-databases. Every key starts with the topic prefix `P = topic + b"\0"`;
integers are big-endian so keys sort numerically; a *lane* is `2**63 - 1 - priority`, so the highest
priority sorts first; `seq` numbers messages (the message id is `str(seq)`) and `order` places a message
in its lane, both drawn from one counter kept in `meta`.

```
messages  P seq                  -> created, priority, key, payload bytes   (written once; deleted on ack)
ready     P lane order           -> seq, attempt, key                       (handed out by cursor order)
parked    P hash(key) lane order -> seq, attempt, key                       (waiting for their key's lease)
leases    P seq                  -> lane, order, attempt, key               (returned to `ready` on open)
delayed   P seq                  -> due (epoch s), lane, attempt, key
dlq       P number               -> seq, attempt, failed_at, reason
prior     P seq                  -> attempts before its last replay          (replayed messages only)
meta      b"next"                -> the counter
```
"""

from __future__ import annotations

import struct
from hashlib import blake2b
from typing import TYPE_CHECKING, TypeVar

import lmdb

from ._env import open_env
from ._resident import ResidentPages

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterator

__all__ = ("LmdbStore", "Txn", "key_tail", "lane_of", "priority_of", "unpack_message")

T = TypeVar("T")

_U64 = struct.Struct(">Q")
_U32 = struct.Struct(">I")
_SLOT = struct.Struct(">QQ")  # lane, order
_ENTRY = struct.Struct(">QI")  # seq, attempt (+ key tail)
_LEASE = struct.Struct(">QQI")  # lane, order, attempt (+ key tail)
_DELAYED = struct.Struct(">dQI")  # due (epoch seconds), lane, attempt (+ key tail)
_DEAD = struct.Struct(">QId")  # seq, attempt, failed_at (+ reason, UTF-8)
_HEADER = struct.Struct(">dqi")  # created, priority, key length or -1 (+ key + payload)
_TOP = 2**63 - 1
_NEXT = b"next"

Leased = tuple[int, int, int, int, "str | None", bytes, int]
"""What `Txn.lease_ready` takes: seq, lane, order, attempt, key, the stored message, prior attempts."""


def lane_of(priority: int) -> int:
    """The lane number of a priority: higher priorities sort first."""
    if not isinstance(priority, int) or not -_TOP - 1 <= priority <= _TOP:
        raise ValueError(f"priority must be a 64-bit int, got {priority!r}")
    return _TOP - priority


def priority_of(lane: int) -> int:
    """The priority of a lane number."""
    return _TOP - lane


def key_tail(key: str | None) -> bytes:
    """The partition key as stored after an index entry: empty for `None`."""
    return b"" if key is None else b"\x01" + key.encode()


def _key_of(tail: bytes) -> str | None:
    return tail[1:].decode() if tail else None


def _key_hash(key: str) -> bytes:
    return blake2b(key.encode(), digest_size=8).digest()


def unpack_message(blob: bytes) -> tuple[float, int, str | None, bytes]:
    """Split a stored message into created, priority, key and payload bytes."""
    created, priority, size = _HEADER.unpack_from(blob)
    start = _HEADER.size + max(size, 0)
    key = blob[_HEADER.size : start].decode() if size >= 0 else None
    return created, priority, key, blob[start:]


class Txn:
    """One write transaction of the store: every state change of a message, inside one commit."""

    __slots__ = ("_store", "next", "txn")

    def __init__(self, store: LmdbStore, txn: lmdb.Transaction[bytes], next: int) -> None:
        self._store = store
        self.txn = txn
        self.next = next

    def number(self) -> int:
        """Draw the next seq/order/DLQ number."""
        self.next += 1
        return self.next - 1

    def publish(
        self, p: bytes, created: float, priority: int, key: str | None, blobs: list[bytes], due: float | None
    ) -> list[int]:
        """Store new messages, ready (or delayed until `due`, epoch seconds); return their seqs."""
        s, txn, lane, tail = self._store, self.txn, lane_of(priority), key_tail(key)
        kb = b"" if key is None else key.encode()
        header = _HEADER.pack(created, priority, len(kb) if key is not None else -1) + kb
        seqs = []
        for blob in blobs:
            seq = self.number()
            txn.put(p + _U64.pack(seq), header + blob, db=s.messages)
            if due is None:
                txn.put(p + _SLOT.pack(lane, seq), _ENTRY.pack(seq, 1) + tail, db=s.ready)
            else:
                txn.put(p + _U64.pack(seq), _DELAYED.pack(due, lane, 1) + tail, db=s.delayed)
            seqs.append(seq)
        return seqs

    def lease_ready(self, p: bytes, busy: Collection[str], limit: int) -> list[Leased]:
        """Move up to `limit` ready messages to `leases`, best lane first; park those whose key is busy."""
        s, txn = self._store, self.txn
        taken: list[Leased] = []
        keys: set[str] = set()
        cursor = txn.cursor(db=s.ready)
        if not cursor.set_range(p):
            return taken
        start = len(p)
        while len(taken) < limit:
            slot = cursor.key()
            if not slot.startswith(p):
                break
            value = cursor.value()
            seq, attempt = _ENTRY.unpack_from(value)
            key = _key_of(value[_ENTRY.size :])
            if key is not None and (key in busy or key in keys):
                txn.put(p + _key_hash(key) + slot[start:], value, db=s.parked)
                cursor.delete()
                continue
            cursor.delete()
            lane, order = _SLOT.unpack_from(slot, start)
            txn.put(p + _U64.pack(seq), _LEASE.pack(lane, order, attempt) + value[_ENTRY.size :], db=s.leases)
            blob = txn.get(p + _U64.pack(seq), db=s.messages)
            assert blob is not None, f"message {seq} is indexed but not stored"
            taken.append((seq, lane, order, attempt, key, blob, self.prior(p, seq)))
            if key is not None:
                keys.add(key)
        return taken

    def prior(self, p: bytes, seq: int) -> int:
        """The attempts message `seq` used before its last replay from the DLQ (0: never replayed)."""
        raw = self.txn.get(p + _U64.pack(seq), db=self._store.prior)
        return 0 if raw is None else int(_U32.unpack(raw)[0])

    def release(self, p: bytes, key: str) -> bool:
        """`key`'s lease ended: move its first parked message back to its place in `ready`."""
        s, txn = self._store, self.txn
        prefix = p + _key_hash(key)
        cursor = txn.cursor(db=s.parked)
        if not cursor.set_range(prefix) or not cursor.key().startswith(prefix):
            return False
        txn.put(p + cursor.key()[len(prefix) :], cursor.value(), db=s.ready)
        cursor.delete()
        return True

    def unlease(self, p: bytes, seq: int, *, drop: bool = False) -> None:
        """End a lease; `drop` also deletes the message (ack)."""
        self.txn.delete(p + _U64.pack(seq), db=self._store.leases)
        if drop:
            self.txn.delete(p + _U64.pack(seq), db=self._store.messages)
            self.txn.delete(p + _U64.pack(seq), db=self._store.prior)

    def ready(self, p: bytes, seq: int, lane: int, order: int, attempt: int, key: str | None) -> None:
        """Put a message into its lane at `order`."""
        self.txn.put(
            p + _SLOT.pack(lane, order), _ENTRY.pack(seq, attempt) + key_tail(key), db=self._store.ready
        )

    def delay(self, p: bytes, seq: int, due: float, lane: int, attempt: int, key: str | None) -> None:
        """Keep a message aside until `due` (epoch seconds)."""
        value = _DELAYED.pack(due, lane, attempt) + key_tail(key)
        self.txn.put(p + _U64.pack(seq), value, db=self._store.delayed)

    def undelay(self, p: bytes, seq: int) -> None:
        """A delayed message is due: to the tail of its lane."""
        s = self._store
        value = self.txn.pop(p + _U64.pack(seq), db=s.delayed)
        if value is not None:
            _, lane, attempt = _DELAYED.unpack_from(value)
            tail = value[_DELAYED.size :]
            self.txn.put(p + _SLOT.pack(lane, self.number()), _ENTRY.pack(seq, attempt) + tail, db=s.ready)

    def bury(self, p: bytes, seq: int, attempt: int, reason: str, failed_at: float) -> None:
        """Add a message to the topic's DLQ."""
        value = _DEAD.pack(seq, attempt, failed_at) + reason.encode()
        self.txn.put(p + _U64.pack(self.number()), value, db=self._store.dlq)

    def replay(self, p: bytes, ids: Collection[str] | None) -> int:
        """Move DLQ entries (all, or those whose id is in `ids`) to the tails of their lanes.

        Each starts at attempt 1 again, and the attempts it had used are added to its `prior` count.
        """
        s, txn, moved = self._store, self.txn, 0
        cursor = txn.cursor(db=s.dlq)
        found = cursor.set_range(p)
        while found and cursor.key().startswith(p):
            seq, attempt = _DEAD.unpack_from(cursor.value())[:2]
            if ids is not None and str(seq) not in ids:
                found = cursor.next()
                continue
            cursor.delete()
            blob = txn.get(p + _U64.pack(seq), db=s.messages)
            if blob is not None:
                _, priority, key, _ = unpack_message(blob)
                prior = self.prior(p, seq) + attempt
                txn.put(p + _U64.pack(seq), _U32.pack(min(prior, 2**32 - 1)), db=s.prior)
                self.ready(p, seq, lane_of(priority), self.number(), 1, key)
                moved += 1
            found = cursor.key() != b""
        return moved


class LmdbStore:
    """The LMDB environment of one queue directory (see the module docstring for the layout).

    Opened with `sync=False, metasync=False`: a commit is in the OS page cache when it returns, so it
    survives the process being killed; a power cut or kernel crash may lose the last commits.
    `readonly` opens it for reading beside the process that writes it (LMDB serves readers of other
    processes a consistent snapshot per transaction); `write` then fails.
    """

    def __init__(self, path: str, *, map_size: int, readonly: bool = False) -> None:
        self.readonly = readonly
        if readonly:  # the map is as large as the file; the sub-databases must exist
            self.env = open_env(path, readonly=True, max_dbs=8)
        else:
            self.env = open_env(path, map_size=map_size, max_dbs=8)
        create = not readonly
        self.messages = self.env.open_db(b"messages", create=create)
        self.ready = self.env.open_db(b"ready", create=create)
        self.parked = self.env.open_db(b"parked", create=create)
        self.leases = self.env.open_db(b"leases", create=create)
        self.delayed = self.env.open_db(b"delayed", create=create)
        self.dlq = self.env.open_db(b"dlq", create=create)
        self.meta = self.env.open_db(b"meta", create=create)
        # a read-only store never leases or replays; a directory of an earlier version has no `prior` yet
        self.prior = self.env.open_db(b"prior", create=create) if create or self._has(b"prior") else self.meta
        with self.env.begin() as txn:
            raw = txn.get(_NEXT, db=self.meta)
        self._next = 1 if raw is None else _U64.unpack(raw)[0]
        self._resident = ResidentPages(self.env)  # a long queue's file pages would all stay in RSS

    def _has(self, name: bytes) -> bool:
        with self.env.begin() as txn:
            return txn.get(name) is not None  # named databases are keys of the main one

    def write(self, change: Callable[[Txn], T]) -> T:
        """Run `change` in one write transaction and commit; grow the map and retry when it is full."""
        while True:
            try:
                with self.env.begin(write=True) as txn:
                    tx = Txn(self, txn, self._next)
                    result = change(tx)
                    if tx.next != self._next:
                        txn.put(_NEXT, _U64.pack(tx.next), db=self.meta)
            except lmdb.MapFullError:
                self.env.set_mapsize(self.env.info()["map_size"] * 2)
                continue
            self._next = tx.next
            self._resident.wrote()
            return result

    def message(self, p: bytes, seq: int) -> bytes | None:
        """The stored message `seq` of topic prefix `p`."""
        with self.env.begin() as txn:
            blob: bytes | None = txn.get(p + _U64.pack(seq), db=self.messages)
            return blob

    def dead_letters(self, p: bytes, limit: int) -> list[tuple[int, int, float, str, bytes]]:
        """Up to `limit` DLQ entries of a topic, oldest first: seq, attempt, failed_at, reason, message."""
        out: list[tuple[int, int, float, str, bytes]] = []
        with self.env.begin() as txn:
            cursor = txn.cursor(db=self.dlq)
            found = cursor.set_range(p)
            while found and len(out) < limit and cursor.key().startswith(p):
                value = cursor.value()
                seq, attempt, failed_at = _DEAD.unpack_from(value)
                blob = txn.get(p + _U64.pack(seq), db=self.messages) or b""
                out.append((seq, attempt, failed_at, value[_DEAD.size :].decode(), blob))
                found = cursor.next()
        return out

    def recover(self, max_attempts: int, failed_at: float) -> None:
        """Undo what a process that ended left behind.

        Leased messages come back with `attempt + 1` (or go to the DLQ at `max_attempts`), and parked
        messages go back to their places (no key is leased any more).
        """

        def change(tx: Txn) -> None:
            txn = tx.txn
            for k, value in txn.cursor(db=self.leases):
                p, seq = k[:-8], _U64.unpack_from(k, len(k) - 8)[0]
                lane, order, attempt = _LEASE.unpack_from(value)
                if attempt >= max_attempts:
                    reason = f"lease held by a process that ended, on attempt {attempt} of {max_attempts}"
                    tx.bury(p, seq, attempt, reason, failed_at)
                else:
                    tx.ready(p, seq, lane, order, attempt + 1, _key_of(value[_LEASE.size :]))
            for k, value in txn.cursor(db=self.parked):
                txn.put(k[: k.index(b"\0") + 1] + k[-16:], value, db=self.ready)
            txn.drop(self.leases, delete=False)
            txn.drop(self.parked, delete=False)

        self.write(change)

    def delayed_messages(self) -> Iterator[tuple[bytes, int, float]]:
        """Every delayed message: topic prefix, seq, due (epoch seconds)."""
        with self.env.begin() as txn:
            for k, value in txn.cursor(db=self.delayed):
                yield k[:-8], _U64.unpack_from(k, len(k) - 8)[0], _DELAYED.unpack_from(value)[0]

    def pending_counts(self) -> dict[bytes, int]:
        """Messages per topic prefix that are not in the DLQ."""
        counts: dict[bytes, int] = {}
        with self.env.begin() as txn:
            for k in txn.cursor(db=self.messages).iternext(values=False):
                counts[k[:-8]] = counts.get(k[:-8], 0) + 1
            for k in txn.cursor(db=self.dlq).iternext(values=False):
                counts[k[:-8]] = counts.get(k[:-8], 0) - 1
        return counts

    def pending_count(self, p: bytes) -> int:
        """Messages of topic prefix `p` that are not in the DLQ."""
        count = 0
        with self.env.begin() as txn:
            for db, sign in ((self.messages, 1), (self.dlq, -1)):
                cursor = txn.cursor(db=db)
                found = cursor.set_range(p)
                while found and cursor.key().startswith(p):
                    count += sign
                    found = cursor.next()
        return count

    def close(self) -> None:
        """Flush to the OS (and disk) and close the environment."""
        if not self.readonly:
            self.env.sync(True)
        self.env.close()
