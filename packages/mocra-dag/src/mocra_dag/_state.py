"""`RunStateStore`: where node results and cached outputs live, fenced by the run guard's token."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol

import msgspec

from ._errors import OutputNotSerialisable, StaleToken

if TYPE_CHECKING:
    from types import TracebackType
    from typing import Self

__all__ = ("MemoryRunStateStore", "NodeRecord", "RecordCodec", "RunStateStore")


class NodeRecord(msgspec.Struct, frozen=True, kw_only=True):
    """The stored result of one node in one run (or one cached output).

    Attributes:
        status: `"succeeded"` or `"failed"`; only succeeded nodes are skipped when a run resumes.
        output: The node's output (succeeded only).
        attempts: How many attempts ran (0 if the output came from the cache).
        error: `repr` of the error (failed only).
        at: When it finished, in seconds on the scheduler's clock.
    """

    status: Literal["succeeded", "failed"]
    output: Any = None
    attempts: int = 0
    error: str | None = None
    at: float = 0.0


class RunStateStore(Protocol):
    """Node records per run, fenced by token, plus an output cache by idempotency key.

    Fencing: the store remembers, per run id, the highest token it has seen (`begin` and `commit` raise
    it). A `begin` or `commit` with a lower token raises `StaleToken`: a process that lost its lease (it
    paused past the lease's expiry and another process took the run over) cannot overwrite the newer
    holder's results. A token of None skips fencing.

    Outputs: stores encode records as msgpack (msgspec), so outputs must be msgpack-serialisable (None,
    bool, int, float, str, bytes, list, tuple, dict, msgspec Structs, dataclasses, datetime, ...); they are
    decoded as plain msgpack types (the scheduler converts them to the node's `Step.output_type`, if set)
    and `commit`/`store_cached` raise `OutputNotSerialisable` for anything else. Only a
    `MemoryRunStateStore(serialise=False)` keeps outputs as objects, without that constraint.

    Lifecycle: `async with store:` (or `aclose()`) releases the store's resources.
    """

    async def begin(self, run_id: str, token: int | None) -> dict[str, NodeRecord]:
        """Raise the run's fence to `token` and return its node records (node id → record)."""
        ...

    async def commit(self, run_id: str, node: str, record: NodeRecord, token: int | None) -> None:
        """Store the record of `node`, replacing an older one, if `token` is not stale."""
        ...

    async def load(self, run_id: str) -> dict[str, NodeRecord]:
        """Return the run's node records without fencing (empty if the run is unknown)."""
        ...

    async def delete(self, run_id: str) -> None:
        """Forget a run: its records and its fence. Only for runs nobody is executing."""
        ...

    async def load_cached(self, key: str) -> NodeRecord | None:
        """Return the cached output record of an idempotency key, if any."""
        ...

    async def store_cached(self, key: str, record: NodeRecord) -> None:
        """Cache a succeeded record under an idempotency key (a later put wins)."""
        ...

    async def aclose(self) -> None:
        """Release the store's resources; the store is unusable afterwards."""
        ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


class RecordCodec:
    """Encodes `NodeRecord`s as msgpack, naming the node or key whose output cannot be encoded."""

    __slots__ = ("_decode", "_encode")

    def __init__(self) -> None:
        self._encode = msgspec.msgpack.Encoder().encode
        self._decode = msgspec.msgpack.Decoder(NodeRecord).decode

    def encode(self, subject: str, record: NodeRecord) -> bytes:
        """Encode `record`; `subject` (e.g. "node 'a' of run 'r'") names it in the error.

        Raises:
            OutputNotSerialisable: The output is not msgpack-serialisable.
        """
        try:
            return self._encode(record)
        except (TypeError, ValueError, msgspec.EncodeError) as exc:
            raise OutputNotSerialisable(subject, str(exc)) from exc

    def decode(self, data: bytes) -> NodeRecord:
        """Decode a record (its output as plain msgpack types)."""
        return self._decode(data)


class MemoryRunStateStore:
    """A `RunStateStore` in process memory: fast, lost when the process exits.

    By default records are stored msgpack-encoded, exactly as a durable store keeps them, so a graph
    behaves the same on every store: outputs must be msgpack-serialisable, and restored or cached
    outputs are decoded copies. With `serialise=False` the objects themselves are kept: any output
    works (a data frame, a connection), restored outputs are the very objects, and nothing is copied.
    Run records stay until `delete`; the output cache keeps the `max_cached` newest keys.

    Args:
        serialise: Encode records as msgpack (True) or keep the objects (False).
        max_cached: How many idempotency keys the output cache holds (oldest evicted first).

    Example:
        >>> import anyio
        >>> async def main():
        ...     store = MemoryRunStateStore()
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

    __slots__ = ("_cache", "_codec", "_fences", "_max_cached", "_runs")

    def __init__(self, *, serialise: bool = True, max_cached: int = 100_000) -> None:
        if max_cached < 0:
            raise ValueError(f"max_cached must be >= 0, got {max_cached!r}")
        self._codec = RecordCodec() if serialise else None
        self._max_cached = max_cached
        self._runs: dict[str, dict[str, NodeRecord | bytes]] = {}
        self._fences: dict[str, int] = {}
        self._cache: dict[str, NodeRecord | bytes] = {}

    def _fence(self, run_id: str, token: int | None) -> None:
        if token is None:
            return
        current = self._fences.get(run_id, -1)
        if token < current:
            raise StaleToken(run_id, token, current)
        if token > current:
            self._fences[run_id] = token

    def _pack(self, subject: str, record: NodeRecord) -> NodeRecord | bytes:
        return record if self._codec is None else self._codec.encode(subject, record)

    def _unpack(self, stored: NodeRecord | bytes) -> NodeRecord:
        if isinstance(stored, NodeRecord) or self._codec is None:
            return stored  # type: ignore[return-value]  # bytes only ever come with a codec
        return self._codec.decode(stored)

    def _records(self, run_id: str) -> dict[str, NodeRecord]:
        return {node: self._unpack(stored) for node, stored in self._runs.get(run_id, {}).items()}

    async def begin(self, run_id: str, token: int | None) -> dict[str, NodeRecord]:
        """Raise the fence and return the run's records."""
        self._fence(run_id, token)
        return self._records(run_id)

    async def commit(self, run_id: str, node: str, record: NodeRecord, token: int | None) -> None:
        """Store the record if `token` is not stale; raise `OutputNotSerialisable` for a bad output."""
        packed = self._pack(f"node {node!r} of run {run_id!r}", record)
        self._fence(run_id, token)
        self._runs.setdefault(run_id, {})[node] = packed

    async def load(self, run_id: str) -> dict[str, NodeRecord]:
        """Return the run's records."""
        return self._records(run_id)

    async def delete(self, run_id: str) -> None:
        """Forget the run."""
        self._runs.pop(run_id, None)
        self._fences.pop(run_id, None)

    async def load_cached(self, key: str) -> NodeRecord | None:
        """Return the cached record of `key`."""
        stored = self._cache.get(key)
        return None if stored is None else self._unpack(stored)

    async def store_cached(self, key: str, record: NodeRecord) -> None:
        """Cache `record` under `key`, evicting the oldest key beyond `max_cached`."""
        packed = self._pack(f"cache key {key!r}", record)
        self._cache.pop(key, None)
        self._cache[key] = packed
        while len(self._cache) > self._max_cached:
            del self._cache[next(iter(self._cache))]

    async def aclose(self) -> None:
        """Nothing to release."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
