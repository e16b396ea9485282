"""The `Coordination` protocol: shared state for the workers of one crawl job, kept alike by every backend."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import msgspec

from ._errors import CoordinationError

if TYPE_CHECKING:
    from types import TracebackType
    from typing import Self

__all__ = (
    "LEADER_LOCK",
    "MAX_KEY_BYTES",
    "Coordination",
    "LockInfo",
    "check_key",
    "check_lock_key",
    "check_ttl",
    "parse_counter",
)

MAX_KEY_BYTES = 256
"""The longest key every backend accepts, in UTF-8 bytes."""

LEADER_LOCK = "__leader__"
"""The lock a multi-node backend's `is_leader` holds; lock names starting with `__` are reserved."""

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class LockInfo(msgspec.Struct, frozen=True, kw_only=True):
    """The live holder of a lock.

    Attributes:
        holder: Who holds it (the `holder` passed to `acquire_lock`).
        token: Its fencing token.
        expires: When it lapses unless renewed, in seconds on the backend's clock.
    """

    holder: str
    token: int
    expires: float


class Coordination(Protocol):
    """Shared state for the workers of one crawl job. Keys are str, values bytes. TTLs in seconds.

    The engine's module gates, stop signals, seed-once markers, login locks and cron leadership go through
    this seam. Every backend (in-process, LMDB, later Redis, NATS KV and Raft) keeps these rules, and one
    conformance suite (`tests/coordination/test_conformance.py`) checks them:

    **Keys.** Non-empty `str` of at most `MAX_KEY_BYTES` (256) UTF-8 bytes, without NUL; anything else
    raises `ValueError`. Hash longer names (URLs) before using them as keys.

    **Atomicity.** Each call is one atomic step, linearisable with every other call on the same store,
    from any task, thread or process that shares it. A call that raises changed nothing.

    **Values, counters and lists** share one key space; a key holds either a value (bytes) or a list.
    `get`, `incr` and `compare_and_set` raise `CoordinationError` on a key holding a list; `append` and
    `items` raise it on a key holding a value. `set` and `delete` work on either kind. A counter is a
    value holding a base-10 ASCII integer without sign `+`, spaces or leading zeros (`incr` on anything
    else raises `CoordinationError`), signed 64-bit (an overflow raises it too), so `get` after
    `incr` reads `b"1"`, and `set(key, b"41")` followed by `incr(key)` returns 42.

    **Expiry.** `set`, `set_if_absent` and `compare_and_set` take `ttl` (seconds, > 0, else `ValueError`);
    None means the written value never expires. A value is expired once the backend's clock reaches
    `written + ttl`, and from then on is absent to every call (backends may purge it lazily). `incr` keeps
    the value's expiry; a counter or list created by `incr` or `append` never expires.

    **Locks** live in their own name space (a lock and a value may share a name) and carry fencing
    tokens: every successful `acquire_lock` hands out a new token, strictly greater than every token the
    store handed out before, for any lock, and for durable backends across restarts too. A lock is
    *live* until its expiry; a live lock belongs to its holder:

    - `acquire_lock` succeeds when the lock is free, expired, or live under the same `holder` (then the
      new token replaces the old one, which can no longer renew or release). Use a distinct `holder` per
      party that must be excluded: tasks sharing a holder do not exclude each other.
    - `renew_lock` extends the lock to `ttl` seconds from now if its latest grant is `(holder, token)`,
      even past its expiry as long as nobody acquired it since (then nobody can have used a newer token
      for it); otherwise it returns False and changes nothing.
    - `release_lock` frees the lock under the same condition and returns whether it did.
    - `lock_holder` returns the live holder, or None.

    Fencing: pass the token along with every write the lock protects and have the target refuse tokens
    lower than the highest it has seen (as `mocra_dag.RunStateStore` does): a holder that paused past
    its expiry cannot overwrite the work of the one that took over.

    **Leadership.** `is_leader` answers whether this node currently leads the job's nodes; a single-node
    backend always says True. Multi-node backends hold the reserved lock `LEADER_LOCK` for it.

    **Lifecycle.** `async with coordination:` (or `aclose()`) releases the backend's resources (and
    leadership); calls after that raise `CoordinationError` (the in-process backend, which holds
    nothing, keeps working).

    **Cancellation.** The local and LMDB backends never suspend inside a call, so a call that was
    started completes. Network backends may be cancelled mid-call: the operation may or may not have
    happened, as with a lost reply.
    """

    async def get(self, key: str) -> bytes | None:
        """Return the value of `key`, or None if it is absent or expired."""
        ...

    async def set(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        """Store `value` under `key` (replacing a value or a list), expiring after `ttl` seconds if given."""
        ...

    async def set_if_absent(self, key: str, value: bytes = b"1", *, ttl: float | None = None) -> bool:
        """Store `value` only if `key` is absent or expired; True if it was stored (the gate primitive)."""
        ...

    async def compare_and_set(
        self, key: str, expected: bytes | None, value: bytes | None, *, ttl: float | None = None
    ) -> bool:
        """Replace the value of `key` if it equals `expected`; True if it did.

        `expected=None` means the key must be absent (or expired); `value=None` deletes the key. The new
        value expires after `ttl` seconds if given, else never.
        """
        ...

    async def delete(self, key: str) -> None:
        """Remove `key` (a value or a list); nothing happens if it is absent."""
        ...

    async def incr(self, key: str, delta: int = 1) -> int:
        """Add `delta` to the counter `key` (missing = 0) and return the new value."""
        ...

    async def append(self, key: str, value: bytes) -> int:
        """Append `value` to the list `key` (created if missing) and return the list's new length."""
        ...

    async def items(self, key: str) -> list[bytes]:
        """Return the list `key` in append order (empty if missing)."""
        ...

    async def acquire_lock(self, key: str, holder: str, ttl: float) -> int | None:
        """Take the lock `key` for `ttl` seconds; return its fencing token, or None if another holds it."""
        ...

    async def renew_lock(self, key: str, holder: str, token: int, ttl: float) -> bool:
        """Extend the lock to `ttl` seconds from now if still granted to `(holder, token)`."""
        ...

    async def release_lock(self, key: str, holder: str, token: int) -> bool:
        """Free the lock if still granted to `(holder, token)`; True if it did."""
        ...

    async def lock_holder(self, key: str) -> LockInfo | None:
        """Return the live holder of the lock `key`, or None if it is free or expired."""
        ...

    async def is_leader(self) -> bool:
        """Return whether this node leads (single node: always True)."""
        ...

    async def aclose(self) -> None:
        """Release the backend's resources, and leadership if held."""
        ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


def check_key(key: str) -> bytes:
    """Return `key` as UTF-8, or raise `ValueError` if it breaks the key rules.

    Example:
        >>> check_key("gate/login")
        b'gate/login'
    """
    raw = key.encode()
    if not raw or len(raw) > MAX_KEY_BYTES or b"\0" in raw:
        raise ValueError(
            f"coordination keys must be 1 to {MAX_KEY_BYTES} UTF-8 bytes without NUL, got {key!r}"
        )
    return raw


def check_lock_key(key: str) -> bytes:
    """Like `check_key`, and refuse the reserved lock names (starting with `__`)."""
    if key.startswith("__"):
        raise ValueError(f"lock names starting with '__' are reserved, got {key!r}")
    return check_key(key)


def check_ttl(ttl: float | None) -> None:
    """Raise `ValueError` unless `ttl` is None or a positive number of seconds."""
    if ttl is not None and not ttl > 0:
        raise ValueError(f"ttl must be > 0 seconds, got {ttl!r}")


def parse_counter(key: str, value: bytes | None, delta: int) -> int:
    """Return the counter stored as `value` plus `delta`, checking format and 64-bit range.

    Example:
        >>> parse_counter("n", b"41", 1), parse_counter("n", None, -2)
        (42, -2)
    """
    current = 0
    if value is not None:
        try:
            current = int(value)
            valid = str(current).encode() == value
        except ValueError:
            valid = False
        if not valid:
            raise CoordinationError(key, f"holds {value[:40]!r}, not a counter")
    new = current + delta
    if not _INT64_MIN <= new <= _INT64_MAX:
        raise CoordinationError(key, f"counter overflow: {current} + {delta} leaves the signed 64-bit range")
    return new
