"""`DedupSettings`: the `[dedup]` section — whether the seen set is exact or an approximate (Bloom) filter."""

from __future__ import annotations

import msgspec

from .._bounds import at_least

__all__ = ("DedupSettings",)


class DedupSettings(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """How the job's seen set remembers fingerprints (`crawl.dedup` turns dedup on or off).

    Attributes:
        approximate: Keep a scalable Bloom filter instead of the fingerprints themselves: in this
            process (`MemoryBloomSeenSet`) or, for workers sharing a Redis job, on Redis
            (`RedisBloomSeenSet`). Memory stays a few bytes per URL (~2 bytes at 0.1 % when `capacity`
            matches the crawl) instead of 18 (memory) or 64 (Redis), at the price of a few new URLs
            taken for seen and skipped; a URL already seen is never crawled again. A job dir (LMDB) and
            a cluster's Raft plane keep their exact sets.
        false_positive_rate: With `approximate`: the bound on the chance that a new URL is taken for
            seen, at any size (the filters added as it grows share it: p/2, p/4, …). Between 0 and 0.5.
        capacity: With `approximate`: fingerprints the first filter holds at that rate; each filter
            added when the last is full holds twice as many. Set it to the URLs the crawl may see: a
            filter is allocated whole (~2 bytes per URL of capacity at 0.1 %), and a crawl that outgrows
            it costs ~1.5-3× that.

    Example:
        >>> DedupSettings(approximate=True, capacity=100_000_000).false_positive_rate
        0.001
    """

    approximate: bool = False
    false_positive_rate: float = 0.001
    capacity: int = 1_000_000

    def __post_init__(self) -> None:
        at_least(self, 1, "capacity")
        if not 0 < self.false_positive_rate <= 0.5:
            rate = self.false_positive_rate
            raise ValueError(f"false_positive_rate: must be > 0 and <= 0.5, got {rate!r}")
