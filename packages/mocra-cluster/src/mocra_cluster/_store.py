"""`StateStore`: the byte key/value space the state machine mutates, and `MemoryStateStore`."""

from __future__ import annotations

import bisect
from contextlib import contextmanager
from typing import TYPE_CHECKING, Protocol

import msgspec

if TYPE_CHECKING:
    from collections.abc import Iterator
    from contextlib import AbstractContextManager

__all__ = ("MemoryStateStore", "StateStore")

_snapshot_decoder = msgspec.msgpack.Decoder(list[tuple[bytes, bytes]])


class StateStore(Protocol):
    """Ordered byte keys to byte values, changed inside transactions.

    `StateMachine` opens `transaction(write=True)` around each command and `transaction(write=False)`
    around each read; inside, `get`/`put`/`delete`/`scan` see and make the changes of that transaction
    only, and a transaction left by an exception changes nothing. Transactions nest (an inner one joins
    the outer one). `snapshot()` encodes the whole content (the same content always gives the same
    bytes) and `restore()` replaces the content with a snapshot's.
    """

    def transaction(self, *, write: bool) -> AbstractContextManager[None]:
        """Open a transaction (or join the one already open)."""
        ...

    def get(self, key: bytes) -> bytes | None:
        """Return the value of `key`, or None."""
        ...

    def put(self, key: bytes, value: bytes) -> None:
        """Store `value` under `key`."""
        ...

    def delete(self, key: bytes) -> bool:
        """Remove `key`; True if it was there."""
        ...

    def scan(self, prefix: bytes) -> list[tuple[bytes, bytes]]:
        """Return the items whose key starts with `prefix`, in key order."""
        ...

    def snapshot(self) -> bytes:
        """Encode the whole content."""
        ...

    def restore(self, snapshot: bytes) -> None:
        """Replace the whole content with that of `snapshot`."""
        ...


class MemoryStateStore:
    """A `StateStore` in a dict, for the Raft plane (whose log and snapshots make it durable) and tests.

    A write transaction keeps an undo log, so an exception inside it rolls its changes back. Not
    thread-safe: one thread (the Raft thread, or the event loop) uses it.

    Example:
        >>> store = MemoryStateStore()
        >>> with store.transaction(write=True):
        ...     store.put(b"k/b", b"2")
        ...     store.put(b"k/a", b"1")
        >>> store.scan(b"k/")
        [(b'k/a', b'1'), (b'k/b', b'2')]
        >>> copy = MemoryStateStore()
        >>> copy.restore(store.snapshot())
        >>> copy.snapshot() == store.snapshot()
        True
    """

    def __init__(self) -> None:
        self._data: dict[bytes, bytes] = {}
        self._keys: list[bytes] = []  # sorted, for scans
        self._undo: dict[bytes, bytes | None] | None = None
        self._depth = 0

    def __len__(self) -> int:
        return len(self._data)

    @contextmanager
    def transaction(self, *, write: bool) -> Iterator[None]:
        """Open a transaction (or join the one already open); an exception rolls back its writes."""
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        self._depth = 1
        self._undo = {}
        try:
            yield
        except BaseException:
            self._roll_back(self._undo)
            raise
        finally:
            self._undo = None
            self._depth = 0

    def _roll_back(self, undo: dict[bytes, bytes | None]) -> None:
        for key, old in undo.items():
            if old is None:
                self._drop(key)
            else:
                self._set(key, old)

    def _remember(self, key: bytes) -> None:
        if self._undo is not None and key not in self._undo:
            self._undo[key] = self._data.get(key)

    def _set(self, key: bytes, value: bytes) -> None:
        if key not in self._data:
            bisect.insort(self._keys, key)
        self._data[key] = value

    def _drop(self, key: bytes) -> bool:
        if self._data.pop(key, None) is None:
            return False
        del self._keys[bisect.bisect_left(self._keys, key)]
        return True

    def get(self, key: bytes) -> bytes | None:
        """Return the value of `key`, or None."""
        return self._data.get(key)

    def put(self, key: bytes, value: bytes) -> None:
        """Store `value` under `key`."""
        self._remember(key)
        self._set(key, bytes(value))

    def delete(self, key: bytes) -> bool:
        """Remove `key`; True if it was there."""
        self._remember(key)
        return self._drop(key)

    def scan(self, prefix: bytes) -> list[tuple[bytes, bytes]]:
        """Return the items whose key starts with `prefix`, in key order."""
        found = []
        for index in range(bisect.bisect_left(self._keys, prefix), len(self._keys)):
            key = self._keys[index]
            if not key.startswith(prefix):
                break
            found.append((key, self._data[key]))
        return found

    def snapshot(self) -> bytes:
        """Encode the whole content as msgpack (sorted pairs, so equal content gives equal bytes)."""
        return msgspec.msgpack.encode([(key, self._data[key]) for key in self._keys])

    def restore(self, snapshot: bytes) -> None:
        """Replace the whole content with that of `snapshot`.

        Raises:
            msgspec.DecodeError: `snapshot` is not a snapshot.
        """
        pairs = _snapshot_decoder.decode(snapshot)
        self._data = dict(pairs)
        self._keys = sorted(self._data)
