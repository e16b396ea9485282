"""The steps `LmdbCoordination` takes inside one LMDB transaction: values, lists and lock grants.

Each takes the shared environment (`SharedEnv`, layout in `_coordination_env.py`) and the open
transaction; `clock` gives epoch seconds and is read inside the transaction, as the caller's would be.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ...coordination._errors import CoordinationError
from ...coordination._protocol import LEADER_LOCK
from ._coordination_env import HEAD, LIST, LOCK, VALUE

if TYPE_CHECKING:
    from collections.abc import Callable

    import lmdb

    from ._coordination_env import SharedEnv

    Txn = lmdb.Transaction[bytes]

__all__ = (
    "Entry",
    "acquire",
    "grant",
    "live_entry",
    "put_value",
    "read_value",
    "release",
    "release_leader",
    "renew",
    "sweep",
)

Entry = tuple[int, float, bytes]  # kind, deadline, payload
_LEADER = LEADER_LOCK.encode()


def live_entry(shared: SharedEnv, txn: Txn, kb: bytes, clock: Callable[[], float]) -> Entry | None:
    """The live entry of key `kb` (kind, deadline, payload), or None if absent or expired."""
    raw = txn.get(kb, db=shared.values)
    if raw is None:
        return None
    kind, deadline = HEAD.unpack_from(raw)
    if deadline != math.inf and deadline <= clock():
        return None
    return kind, deadline, raw[HEAD.size :]


def read_value(
    shared: SharedEnv, txn: Txn, key: str, kb: bytes, clock: Callable[[], float]
) -> tuple[bytes | None, float]:
    """The value of `key` and its deadline (None, inf if absent); raises if it holds a list."""
    found = live_entry(shared, txn, kb, clock)
    if found is None:
        return None, math.inf
    if found[0] != VALUE:
        raise CoordinationError(key, "holds a list, not a value")
    return found[2], found[1]


def put_value(shared: SharedEnv, txn: Txn, kb: bytes, data: bytes, deadline: float) -> None:
    """Store a value under `kb`, dropping the elements of a list it held."""
    old = txn.get(kb, db=shared.values)
    if old is not None and old[0] == LIST:
        shared.drop_elements(txn, kb)
    txn.put(kb, HEAD.pack(VALUE, deadline) + data, db=shared.values)


def sweep(shared: SharedEnv, txn: Txn, now: float) -> None:
    """Delete every value whose deadline has passed."""
    cursor = txn.cursor(db=shared.values)
    found = cursor.first()
    while found:
        kind, deadline = HEAD.unpack_from(cursor.value())
        if kind == VALUE and deadline <= now:
            cursor.delete()
            found = cursor.key() != b""
        else:
            found = cursor.next()


def grant(shared: SharedEnv, txn: Txn, kb: bytes) -> tuple[int, float, str] | None:
    """The latest grant of the lock `kb`: token, deadline, holder (expired or not), or None."""
    raw = txn.get(kb, db=shared.locks)
    if raw is None:
        return None
    token, deadline = LOCK.unpack_from(raw)
    return token, deadline, raw[LOCK.size :].decode()


def acquire(
    shared: SharedEnv,
    txn: Txn,
    kb: bytes,
    holder: str,
    ttl: float,
    clock: Callable[[], float],
) -> tuple[int, float] | None:
    """Grant the lock if free, expired or `holder`'s: the new token and deadline, or None."""
    now = clock()
    found = grant(shared, txn, kb)
    if found is not None and found[1] > now and found[2] != holder:
        return None
    token = shared.next_token(txn)
    txn.put(kb, LOCK.pack(token, now + ttl) + holder.encode(), db=shared.locks)
    return token, now + ttl


def renew(
    shared: SharedEnv,
    txn: Txn,
    kb: bytes,
    holder: str,
    token: int,
    ttl: float,
    clock: Callable[[], float],
) -> float | None:
    """Extend the lock by `ttl` if its latest grant is `(holder, token)`: the new deadline, or None."""
    found = grant(shared, txn, kb)
    if found is None or found[0] != token or found[2] != holder:
        return None
    deadline = clock() + ttl
    txn.put(kb, LOCK.pack(token, deadline) + holder.encode(), db=shared.locks)
    return deadline


def release(shared: SharedEnv, txn: Txn, kb: bytes, holder: str, token: int) -> bool:
    """Free the lock if its latest grant is `(holder, token)`; whether it was."""
    found = grant(shared, txn, kb)
    if found is None or found[0] != token or found[2] != holder:
        return False
    return bool(txn.delete(kb, db=shared.locks))


def release_leader(shared: SharedEnv, txn: Txn, token: int) -> None:
    """Drop the leader lease if its grant still has `token`."""
    raw = txn.get(_LEADER, db=shared.locks)
    if raw is not None and LOCK.unpack_from(raw)[0] == token:
        txn.delete(_LEADER, db=shared.locks)
