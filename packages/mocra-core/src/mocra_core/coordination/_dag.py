"""Adapters that let `mocra_dag`'s run guard and run state live in a `Coordination`."""

from __future__ import annotations

from hashlib import blake2b
from typing import TYPE_CHECKING

import anyio.lowlevel
import msgspec

from mocra_dag import Lease, NodeRecord, OutputNotSerialisable, StaleToken

from ._protocol import MAX_KEY_BYTES

if TYPE_CHECKING:
    from types import TracebackType
    from typing import Self

    from ._protocol import Coordination

__all__ = ("CoordinationLeaseStore", "CoordinationRunStateStore")


def _name_key(prefix: str, name: str) -> str:
    """`prefix + name`, or `prefix + "#" + digest` when that would break the key rules."""
    key = prefix + name
    if "\0" in name or len(key.encode()) > MAX_KEY_BYTES or name.startswith("#"):
        return prefix + "#" + blake2b(name.encode(), digest_size=20).hexdigest()
    return key


class CoordinationLeaseStore:
    """A `mocra_dag.LeaseStore` on a `Coordination`'s fenced locks, so a `RunGuard` can use it.

    A lease on `name` is the lock `prefix + name` (hashed when too long), its owner the lock's holder and
    its token the lock's fencing token; `expires` is on the coordination's clock. The semantics are the
    ones both protocols define: acquire if free or expired, renew while nobody took over (else
    `StaleToken`), release only under the same token. Closing this store does not close `coordination`.

    Args:
        coordination: Where the locks live (in-process, LMDB, ...).
        prefix: Prepended to lease names to form lock names.

    Example:
        >>> import anyio
        >>> from mocra_dag import RunAlreadyActive, RunGuard
        >>> from mocra_core.coordination import LocalCoordination
        >>> async def main():
        ...     guard = RunGuard(CoordinationLeaseStore(LocalCoordination()), ttl=30)
        ...     async with guard.hold("nightly") as lease:
        ...         try:
        ...             async with guard.hold("nightly"):
        ...                 pass
        ...         except RunAlreadyActive as exc:
        ...             print("busy, token", lease.token)
        >>> anyio.run(main)
        busy, token 1
    """

    __slots__ = ("_coordination", "_prefix")

    def __init__(self, coordination: Coordination, *, prefix: str = "dag/lease/") -> None:
        self._coordination = coordination
        self._prefix = prefix

    async def _lease(self, name: str, owner: str, token: int) -> Lease:
        info = await self._coordination.lock_holder(_name_key(self._prefix, name))
        if info is None or info.token != token:  # lapsed at once (a tiny ttl): renewing will tell
            return Lease(name=name, owner=owner, token=token, expires=0.0)
        return Lease(name=name, owner=owner, token=token, expires=info.expires)

    async def acquire(self, name: str, *, owner: str, ttl: float) -> Lease | None:
        """Take the lease of `name` for `ttl` seconds, or return None if someone holds it."""
        token = await self._coordination.acquire_lock(_name_key(self._prefix, name), owner, ttl)
        return None if token is None else await self._lease(name, owner, token)

    async def renew(self, lease: Lease, *, ttl: float) -> Lease:
        """Extend a held lease to `ttl` seconds from now; raise `StaleToken` if it was lost."""
        key = _name_key(self._prefix, lease.name)
        if not await self._coordination.renew_lock(key, lease.owner, lease.token, ttl):
            current = await self._coordination.lock_holder(key)
            raise StaleToken(lease.name, lease.token, -1 if current is None else current.token)
        return await self._lease(lease.name, lease.owner, lease.token)

    async def release(self, lease: Lease) -> None:
        """Free the lease if it is still held under its token."""
        await self._coordination.release_lock(_name_key(self._prefix, lease.name), lease.owner, lease.token)

    async def holder(self, name: str) -> Lease | None:
        """Return the unexpired lease of `name`, if any."""
        info = await self._coordination.lock_holder(_name_key(self._prefix, name))
        if info is None:
            return None
        return Lease(name=name, owner=info.holder, token=info.token, expires=info.expires)

    async def aclose(self) -> None:
        """Nothing to release: the coordination belongs to the caller."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


class _RunBlob(msgspec.Struct, array_like=True):
    """All of one run in one value: its fence and its node records (each msgpack-encoded)."""

    fence: int = -1
    records: dict[str, msgspec.Raw] = msgspec.field(default_factory=dict)


class CoordinationRunStateStore:
    """A `mocra_dag.RunStateStore` in a `Coordination`'s key space, one msgpack value per run.

    Each run is one value (`prefix + "run/" + run_id`) holding its fence and its node records, updated
    with `compare_and_set` (retried when another writer got in first), so the fence check and the write
    are one atomic step on every backend. Each commit rewrites the run's value: fine for module graphs
    (tens of nodes, modest outputs), not for runs whose outputs add up to megabytes. Cached outputs are
    values under `prefix + "cache/" + key`, expiring after `cache_ttl` seconds if given. Names that would
    break the key rules are hashed. Outputs must be msgpack-serialisable (`OutputNotSerialisable`
    otherwise) and come back as plain msgpack types. Closing this store does not close `coordination`.

    Args:
        coordination: Where the values live.
        prefix: Prepended to every key.
        cache_ttl: Seconds a cached output lives (None: until overwritten).

    Example:
        >>> import anyio
        >>> from mocra_dag import NodeRecord, StaleToken
        >>> from mocra_core.coordination import LocalCoordination
        >>> async def main():
        ...     store = CoordinationRunStateStore(LocalCoordination())
        ...     await store.begin("r1", 2)
        ...     await store.commit("r1", "a", NodeRecord(status="succeeded", output=(1, 2)), 2)
        ...     try:
        ...         await store.commit("r1", "a", NodeRecord(status="succeeded", output=0), 1)
        ...     except StaleToken as exc:
        ...         print(exc)
        ...     return await store.load("r1")
        >>> anyio.run(main)
        'r1': fencing token 1 is stale (current is 2)
        {'a': NodeRecord(status='succeeded', output=[1, 2], attempts=0, error=None, at=0.0)}
    """

    __slots__ = ("_blob", "_cache_ttl", "_coordination", "_encode", "_prefix", "_record")

    def __init__(
        self, coordination: Coordination, *, prefix: str = "dag/", cache_ttl: float | None = None
    ) -> None:
        self._coordination = coordination
        self._prefix = prefix
        self._cache_ttl = cache_ttl
        self._encode = msgspec.msgpack.Encoder().encode
        self._blob = msgspec.msgpack.Decoder(_RunBlob).decode
        self._record = msgspec.msgpack.Decoder(NodeRecord).decode

    def _pack(self, subject: str, record: NodeRecord) -> bytes:
        try:
            return self._encode(record)
        except (TypeError, ValueError, msgspec.EncodeError) as exc:
            raise OutputNotSerialisable(subject, str(exc)) from exc

    async def _read(self, run_id: str) -> tuple[str, bytes | None, _RunBlob]:
        key = _name_key(self._prefix + "run/", run_id)
        raw = await self._coordination.get(key)
        return key, raw, (_RunBlob() if raw is None else self._blob(raw))

    def _records(self, blob: _RunBlob) -> dict[str, NodeRecord]:
        return {node: self._record(raw) for node, raw in blob.records.items()}

    async def _update(self, run_id: str, token: int | None, node: str | None, packed: bytes) -> _RunBlob:
        """Raise the fence to `token` (and store `packed` for `node`) in one compare-and-set."""
        while True:
            key, raw, blob = await self._read(run_id)
            if token is not None and token < blob.fence:
                raise StaleToken(run_id, token, blob.fence)
            if node is None and (token is None or token == blob.fence):
                return blob  # nothing to write
            if token is not None:
                blob.fence = token
            if node is not None:
                blob.records[node] = msgspec.Raw(packed)
            if await self._coordination.compare_and_set(key, raw, self._encode(blob)):
                return blob
            await anyio.lowlevel.checkpoint()  # another writer got in first: read again

    async def begin(self, run_id: str, token: int | None) -> dict[str, NodeRecord]:
        """Raise the run's fence to `token` and return its node records."""
        return self._records(await self._update(run_id, token, None, b""))

    async def commit(self, run_id: str, node: str, record: NodeRecord, token: int | None) -> None:
        """Store the record of `node` if `token` is not stale."""
        await self._update(run_id, token, node, self._pack(f"node {node!r} of run {run_id!r}", record))

    async def load(self, run_id: str) -> dict[str, NodeRecord]:
        """Return the run's node records without fencing."""
        return self._records((await self._read(run_id))[2])

    async def delete(self, run_id: str) -> None:
        """Forget a run: its records and its fence."""
        await self._coordination.delete(_name_key(self._prefix + "run/", run_id))

    async def load_cached(self, key: str) -> NodeRecord | None:
        """Return the cached output record of an idempotency key, if any."""
        raw = await self._coordination.get(_name_key(self._prefix + "cache/", key))
        return None if raw is None else self._record(raw)

    async def store_cached(self, key: str, record: NodeRecord) -> None:
        """Cache a succeeded record under an idempotency key (a later put wins)."""
        packed = self._pack(f"cache key {key!r}", record)
        await self._coordination.set(_name_key(self._prefix + "cache/", key), packed, ttl=self._cache_ttl)

    async def aclose(self) -> None:
        """Nothing to release: the coordination belongs to the caller."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
