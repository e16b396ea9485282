"""`SeenSet`: the protocol every request-dedup store implements."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import TracebackType
    from typing import Self

__all__ = ("SeenSet",)


class SeenSet(Protocol):
    """The set of request fingerprints a crawl job has already scheduled.

    Fingerprints are the 16-byte digests of `Request.fingerprint`. The engine asks in batches, so a store
    pays one round trip (one LMDB transaction, one Redis pipeline) per batch, not per request.

    Contract:
        * `add_if_absent` answers, for each fingerprint in order, `True` if it was absent and is now
          added, `False` if it was already present. Inside one batch only the first occurrence of a
          fingerprint is `True`. A batch is all-or-nothing: if the call raises or is cancelled, the
          caller must assume none of it was recorded and may retry the whole batch.
        * `contains` and `count` never change the set.
        * `aclose` releases the store (flushing a durable one); `async with` calls it on exit.
          Calling it twice is harmless.

    Implementations: `MemorySeenSet` (one process, lost at exit) and `LmdbSeenSet` (durable, for a
    job directory that a crawl resumes from), `RedisSeenSet` and `ClusterSeenSet` (shared by workers).

    Approximate sets (`dedup.approximate`: `MemoryBloomSeenSet`, `RedisBloomSeenSet`) keep the contract
    with one exception: a fingerprint never added may be answered `False` (and `contains` `True`), with
    a chance below their false-positive rate; one added is never answered `True` again. `count` is then
    the number answered `True`.
    """

    async def add_if_absent(self, fingerprints: Sequence[bytes]) -> list[bool]:
        """Add the fingerprints; return, per fingerprint, whether it was new."""
        ...

    async def contains(self, fingerprint: bytes) -> bool:
        """Return whether `fingerprint` is in the set."""
        ...

    async def count(self) -> int:
        """Return the number of distinct fingerprints in the set."""
        ...

    async def aclose(self) -> None:
        """Release the store; a durable store flushes to disk first."""
        ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


FINGERPRINT_BYTES = 16


def check_fingerprints(fingerprints: Sequence[bytes]) -> None:
    """Raise `ValueError` naming the first fingerprint that is not 16 bytes long (for implementations)."""
    if set(map(len, fingerprints)) - {FINGERPRINT_BYTES}:
        bad = next(fp for fp in fingerprints if len(fp) != FINGERPRINT_BYTES)
        raise ValueError(f"expected {FINGERPRINT_BYTES}-byte fingerprints, got {len(bad)} bytes: {bad!r}")
