"""`ClusterCoordination`: the `Coordination` of a job on a `mocra_cluster` control plane (no Redis needed)."""

from __future__ import annotations

import hashlib
from contextlib import contextmanager
from typing import TYPE_CHECKING

from mocra_cluster import ClusterClosed, ClusterError, ClusterUnavailable, Refused

from ..._errors import BackendError, BackendUnavailable
from ...coordination._errors import CoordinationError
from ...coordination._protocol import (
    MAX_KEY_BYTES,
    LockInfo,
    check_key,
    check_lock_key,
    check_ttl,
    parse_counter,
)

if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import TracebackType
    from typing import Self

    from mocra_cluster import ControlPlane

__all__ = ("ClusterCoordination", "plane_failure")

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_HOLDS_LIST = "holds a list, not a value"


def plane_failure(exc: ClusterError, what: str = "control plane") -> BackendError:
    """The mocra error for a control-plane error: `BackendUnavailable` when it cannot commit now."""
    if isinstance(exc, ClusterUnavailable):
        return BackendUnavailable("cluster", what, str(exc))
    return BackendError("cluster", what, str(exc))


class ClusterCoordination:
    """Coordination shared by the nodes of a `mocra_cluster` control plane (Raft, or LMDB on one host).

    Every write is one command of the plane's replicated state machine (for Raft: one log entry, a
    majority round trip), counters (`incr`) and lists (`append`) included; reads are the plane's local
    reads, which see every write this node made and lag other nodes' writes by the replication delay
    (milliseconds). Expiry is judged on the plane's clock. Locks are the plane's fenced locks, so
    tokens increase across all locks, nodes and restarts.

    **Keys** live under `namespace` (so jobs can share a cluster); a key that would pass the plane's
    256-byte limit with it is replaced by the namespace and its BLAKE2b-128 digest.

    **Leadership.** `is_leader()` is the plane's: the Raft leader (after a failover, the new one), or
    always True on a local plane.

    **Failures.** A write the cluster cannot commit now (no quorum, or a leader change that leaves
    its outcome unknown) raises `BackendUnavailable`; the plane closed under it raises
    `CoordinationError`. The plane belongs to its owner: `aclose` leaves it open, and only makes this
    object refuse further calls.

    Example:
        >>> import anyio, tempfile
        >>> from mocra_cluster import LocalControlPlane
        >>> async def main(path):
        ...     async with LocalControlPlane(path, sync=False) as plane:
        ...         async with ClusterCoordination(plane, namespace="job-1") as coordination:
        ...             first = await coordination.set_if_absent("seeded/shop")
        ...             again = await coordination.set_if_absent("seeded/shop")
        ...             pages = await coordination.incr("pages", 3)
        ...             return first, again, pages, await coordination.is_leader()
        >>> with tempfile.TemporaryDirectory() as path:
        ...     anyio.run(main, path)
        (True, False, 3, True)
    """

    def __init__(self, plane: ControlPlane, *, namespace: str = "") -> None:
        self._plane = plane
        self._prefix = f"{namespace}/" if namespace else ""
        self._closed = False

    @property
    def plane(self) -> ControlPlane:
        """The control plane the calls go to."""
        return self._plane

    def _key(self, key: str, *, lock: bool = False) -> str:
        (check_lock_key if lock else check_key)(key)
        full = self._prefix + key
        if len(full.encode()) <= MAX_KEY_BYTES:
            return full
        return f"{self._prefix}#{hashlib.blake2b(key.encode(), digest_size=16).hexdigest()}"

    @contextmanager
    def _calling(self, key: str = "") -> Iterator[None]:
        if self._closed:
            raise CoordinationError(key, "the coordination store is closed")
        try:
            yield
        except Refused as exc:
            raise CoordinationError(key, exc.problem) from exc
        except ClusterClosed as exc:
            raise CoordinationError(key, f"the control plane is closed: {exc}") from exc
        except ClusterError as exc:
            raise plane_failure(exc) from exc

    async def _holds_list(self, full: str) -> bool:
        try:
            return bool(await self._plane.items(full))
        except Refused:  # a value was written since
            return False

    # ------------------------------------------------------------------ values

    async def get(self, key: str) -> bytes | None:
        """Return the value of `key`, or None if it is absent or expired."""
        full = self._key(key)
        with self._calling(key):
            value = await self._plane.get(full)
            if value is None and await self._holds_list(full):
                raise CoordinationError(key, _HOLDS_LIST)
        return value

    async def set(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        """Store `value` under `key` (replacing a value or a list), expiring after `ttl` seconds if given."""
        full = self._key(key)
        check_ttl(ttl)
        with self._calling(key):
            await self._plane.set(full, value, ttl=ttl)

    async def set_if_absent(self, key: str, value: bytes = b"1", *, ttl: float | None = None) -> bool:
        """Store `value` only if `key` is absent or expired; True if it was stored."""
        full = self._key(key)
        check_ttl(ttl)
        with self._calling(key):
            return await self._plane.compare_and_set(full, None, value, ttl=ttl)

    async def compare_and_set(
        self, key: str, expected: bytes | None, value: bytes | None, *, ttl: float | None = None
    ) -> bool:
        """Replace the value of `key` if it equals `expected` (None: absent); `value=None` deletes it."""
        full = self._key(key)
        check_ttl(ttl)
        with self._calling(key):
            if await self._plane.compare_and_set(full, expected, value, ttl=ttl):
                return True
            if await self._holds_list(full):
                raise CoordinationError(key, _HOLDS_LIST)
        return False

    async def delete(self, key: str) -> None:
        """Remove `key` (a value or a list); nothing happens if it is absent."""
        full = self._key(key)
        with self._calling(key):
            await self._plane.delete(full)

    # ------------------------------------------------------------------ counters and lists

    async def incr(self, key: str, delta: int = 1) -> int:
        """Add `delta` to the counter `key` (missing = 0) and return the new value (one command).

        `incr(key, 0)` is a local read (no command); a `delta` beyond 64 bits takes a read and a
        compare-and-set, repeated while others write.
        """
        full = self._key(key)
        with self._calling(key):
            if delta == 0:
                current = await self._plane.get(full)
                if current is None and await self._holds_list(full):
                    raise CoordinationError(key, _HOLDS_LIST)
                return parse_counter(key, current, 0)
            if _INT64_MIN <= delta <= _INT64_MAX:
                return await self._plane.incr(full, delta)
            while True:
                current = await self._plane.get(full)
                if current is None and await self._holds_list(full):
                    raise CoordinationError(key, _HOLDS_LIST)
                new = parse_counter(key, current, delta)
                if await self._plane.compare_and_set(full, current, str(new).encode()):
                    return new

    async def append(self, key: str, value: bytes) -> int:
        """Append `value` to the list `key` (created if missing) and return the list's new length."""
        full = self._key(key)
        with self._calling(key):
            return await self._plane.append(full, value)

    async def items(self, key: str) -> list[bytes]:
        """Return the list `key` in append order (empty if missing)."""
        full = self._key(key)
        with self._calling(key):
            return await self._plane.items(full)

    # ------------------------------------------------------------------ locks

    async def acquire_lock(self, key: str, holder: str, ttl: float) -> int | None:
        """Take the lock `key` for `ttl` seconds; return its fencing token, or None if another holds it."""
        full = self._key(key, lock=True)
        with self._calling(key):
            return await self._plane.acquire_lock(full, holder, ttl)

    async def renew_lock(self, key: str, holder: str, token: int, ttl: float) -> bool:
        """Extend the lock to `ttl` seconds from now if still granted to `(holder, token)`."""
        full = self._key(key, lock=True)
        with self._calling(key):
            return await self._plane.renew_lock(full, holder, token, ttl)

    async def release_lock(self, key: str, holder: str, token: int) -> bool:
        """Free the lock if still granted to `(holder, token)`; True if it did."""
        full = self._key(key, lock=True)
        with self._calling(key):
            return await self._plane.release_lock(full, holder, token)

    async def lock_holder(self, key: str) -> LockInfo | None:
        """Return the live holder of the lock `key`, or None if it is free or expired."""
        full = self._key(key, lock=True)
        with self._calling(key):
            grant = await self._plane.lock_holder(full)
        if grant is None:
            return None
        return LockInfo(holder=grant.holder, token=grant.token, expires=grant.expires)

    async def is_leader(self) -> bool:
        """Return whether this node leads the control plane (the Raft leader; a local plane: True)."""
        with self._calling():
            return await self._plane.is_leader()

    # ------------------------------------------------------------------ lifecycle

    async def aclose(self) -> None:
        """Refuse further calls; the plane stays open (it belongs to whoever opened it)."""
        self._closed = True

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
