"""`CoordinationSeenSet`: a seen set kept in any coordination store (shared by every worker of a job)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ("CoordinationSeenSet",)


class _SetIfAbsent(Protocol):
    async def set_if_absent(self, key: str, value: bytes = b"1", *, ttl: float | None = None) -> bool: ...

    async def get(self, key: str) -> bytes | None: ...

    async def incr(self, key: str, delta: int = 1) -> int: ...


class CoordinationSeenSet:
    """Fingerprints as `seen/<hex>` keys of a coordination store: one `set_if_absent` per fingerprint.

    Works with every `Coordination` (LMDB for workers on one host, Redis, later Raft); a backend with a
    native set (`RedisSeenSet`) is faster. Nothing is ever forgotten: the store grows by one key per URL.

    Example:
        >>> import anyio
        >>> from mocra_core.coordination import LocalCoordination
        >>> seen = CoordinationSeenSet(LocalCoordination())
        >>> anyio.run(seen.add_if_absent, [b"a" * 16, b"a" * 16, b"b" * 16])
        [True, False, True]
    """

    def __init__(self, store: _SetIfAbsent, *, prefix: str = "seen/") -> None:
        self._store = store
        self._prefix = prefix

    async def add_if_absent(self, fingerprints: Sequence[bytes]) -> list[bool]:
        """Add each fingerprint; True for those that were not there yet (first of duplicates in a batch)."""
        fresh = []
        for fingerprint in fingerprints:
            new = await self._store.set_if_absent(self._prefix + fingerprint.hex())
            if new:
                await self._store.incr(self._prefix + "#count")
            fresh.append(new)
        return fresh

    async def contains(self, fingerprint: bytes) -> bool:
        """True when the fingerprint was added."""
        return await self._store.get(self._prefix + fingerprint.hex()) is not None

    async def count(self) -> int:
        """How many fingerprints were added."""
        return await self._store.incr(self._prefix + "#count", 0)

    async def aclose(self) -> None:
        """Nothing to release: the store belongs to its owner."""

    async def __aenter__(self) -> CoordinationSeenSet:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
