"""`MemoryBloomSeenSet`: an approximate in-process seen set, a scalable Bloom filter of rbloom filters."""

from __future__ import annotations

from typing import TYPE_CHECKING

from anyio.abc import AsyncResource
from rbloom import Bloom

from ...dedup._bloom import filter_layout
from ...dedup._seen_set import check_fingerprints

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ("MemoryBloomSeenSet",)


class MemoryBloomSeenSet(AsyncResource):
    """A seen set in this process's memory that may take a new fingerprint for seen, never the reverse.

    A scalable Bloom filter (`mocra_core.dedup._bloom`): a series of `rbloom.Bloom` filters, the first
    for `capacity` fingerprints, each next one for twice as many at half the error rate, so the chance
    that a new fingerprint is answered `False` stays below `false_positive_rate` at any size. A filter
    is allocated whole when it is started: ~2 bytes per fingerprint of capacity at 0.1 % (15.8 bits),
    against 11-23 (43 at a doubling's peak) for the exact `MemorySeenSet`. Lost when the process ends.

    rbloom (Rust) was measured against fastbloom-rs, pybloomfiltermmap3, pybloom-live and pyprobables
    (`benchmarks/README.md`, "Approximate dedup"): as fast as the other compiled ones per check-and-add,
    with a set-like API, and released most recently. Its hash is Python's `hash` of the fingerprint.

    `count` is the number of fingerprints answered new (each false positive is one fewer than the
    exact count). A batch is added without awaiting, so it is all-or-nothing under cancellation.

    Args:
        capacity: Fingerprints the first filter holds at its share of the rate.
        false_positive_rate: Bound on the chance that a new fingerprint is answered `False`.

    Example:
        >>> import anyio
        >>> async def main() -> tuple[list[bool], bool, int]:
        ...     async with MemoryBloomSeenSet(capacity=1000) as seen:
        ...         new = await seen.add_if_absent([b"a" * 16, b"b" * 16, b"a" * 16])
        ...         return new, await seen.contains(b"b" * 16), await seen.count()
        >>> anyio.run(main)
        ([True, True, False], True, 2)
    """

    def __init__(self, *, capacity: int = 1_000_000, false_positive_rate: float = 0.001) -> None:
        if capacity < 1 or not 0 < false_positive_rate <= 0.5:
            raise ValueError(
                f"expected capacity >= 1 and 0 < false_positive_rate <= 0.5, "
                f"got {capacity!r} and {false_positive_rate!r}"
            )
        self._capacity, self._rate = capacity, false_positive_rate
        self._reset()

    def _reset(self) -> None:
        self._full: list[Bloom] = []  # the filters before the last, which take no more fingerprints
        self._count = 0
        self._start_filter()

    def _start_filter(self) -> None:
        layout = filter_layout(len(self._full), capacity=self._capacity, rate=self._rate)
        self._last = Bloom(layout.capacity, layout.rate)
        self._room = layout.capacity

    @property
    def filters(self) -> int:
        """How many filters the series has grown to."""
        return len(self._full) + 1

    @property
    def size_in_bits(self) -> int:
        """The bits of every filter, allocated."""
        return sum(f.size_in_bits for f in self._full) + self._last.size_in_bits

    async def add_if_absent(self, fingerprints: Sequence[bytes]) -> list[bool]:
        """Add the fingerprints; return, per fingerprint, whether it was new (maybe `False` for a new one).

        Raises:
            ValueError: a fingerprint is not 16 bytes long (nothing is added).
        """
        check_fingerprints(fingerprints)
        new: list[bool] = []
        append = new.append
        full, last, room = self._full, self._last, self._room
        for fp in fingerprints:
            if fp in last:
                append(False)
                continue
            for old in full:  # the full filters, if any
                if fp in old:
                    append(False)
                    break
            else:
                last.add(fp)
                append(True)
                room -= 1
                if not room:
                    full.append(last)
                    self._start_filter()
                    last, room = self._last, self._room
        self._room = room
        self._count += new.count(True)
        return new

    async def contains(self, fingerprint: bytes) -> bool:
        """Return whether `fingerprint` is (probably) in the set: `False` is certain, `True` may be wrong."""
        check_fingerprints([fingerprint])
        return fingerprint in self._last or any(fingerprint in f for f in self._full)

    async def count(self) -> int:
        """Return how many fingerprints were answered new."""
        return self._count

    async def aclose(self) -> None:
        """Free the filters; the set is empty afterwards."""
        self._reset()

    def __repr__(self) -> str:
        return f"MemoryBloomSeenSet(capacity={self._capacity}, false_positive_rate={self._rate})"
