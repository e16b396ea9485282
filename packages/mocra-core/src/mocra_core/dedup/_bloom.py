"""The layout of a scalable Bloom filter: how many bits and hashes each of its filters has.

A scalable Bloom filter (Almeida et al., "Scalable Bloom Filters", 2007) is a series of plain Bloom
filters. Filter `i` holds `capacity * 2**i` fingerprints at the error rate `p * 2**-(i + 1)`, so the rates
of the whole series add up to less than `p`, however many filters it grows to. A fingerprint is in the
set when it is in any filter; a new one goes into the last, and a full last filter gets a successor.
`MemoryBloomSeenSet` (rbloom filters) and `RedisBloomSeenSet` (Redis strings, Lua) both follow it; the
Redis script computes the same figures (`_bloom_lua.py`).

On Redis a filter larger than one segment (`SEGMENT_BITS`, 1 MiB less 16 bytes) is split into whole
segments, one string each, and a fingerprint's bits all go into the segment its hash picks (a partitioned
Bloom filter: each segment is a small Bloom filter of the ~equal share of fingerprints routed to it).
A segment's string then takes exactly 1 MiB of Redis memory (a jemalloc size class), where one long
string would be rounded up to the next class (188.6 MiB → 192 MiB), and no key is large.
"""

from __future__ import annotations

import math
from typing import NamedTuple

__all__ = ("SEGMENT_BITS", "FilterLayout", "filter_layout", "series_bits")

SEGMENT_BITS = ((1 << 20) - 16) * 8
"""Bits of one segment of a filter on Redis: with the string's header it fills a 1 MiB allocation."""

_LN2_SQUARED = math.log(2) ** 2


class FilterLayout(NamedTuple):
    """One filter of the series: fingerprints it holds, its error rate, bits, hash count and segments.

    `bits` is what the formula asks for; on Redis a filter of more than one segment takes
    `segments * SEGMENT_BITS` (the last segment is whole too).
    """

    capacity: int
    rate: float
    bits: int
    hashes: int
    segments: int

    @property
    def redis_bytes(self) -> int:
        """The bytes of the filter's strings on Redis."""
        if self.segments == 1:
            return (self.bits + 7) // 8
        return self.segments * SEGMENT_BITS // 8


def filter_layout(index: int, *, capacity: int, rate: float) -> FilterLayout:
    """The layout of filter `index` (0 = the first) of a series of `capacity` and overall `rate`.

    The optimal sizes for n items at error rate p: m = ceil(-n ln p / ln² 2) bits and k = round(-log2 p)
    hashes (at least 1).

    Example:
        >>> filter_layout(0, capacity=1_000_000, rate=0.001)
        FilterLayout(capacity=1000000, rate=0.0005, bits=15820283, hashes=11, segments=2)
        >>> filter_layout(1, capacity=1_000_000, rate=0.001).capacity
        2000000
    """
    p = rate * 0.5 ** (index + 1)
    n = capacity * 2**index
    bits = math.ceil(-n * math.log(p) / _LN2_SQUARED)
    return FilterLayout(n, p, bits, max(1, round(-math.log2(p))), -(-bits // SEGMENT_BITS))


def series_bits(items: int, *, capacity: int, rate: float) -> int:
    """The bits a series allocates on Redis to hold `items` fingerprints (every filter is allocated whole).

    Example:
        >>> series_bits(100_000_000, capacity=100_000_000, rate=0.001) / 8e6  # MB
        198.17784
    """
    bits, index = 0, 0
    while True:
        layout = filter_layout(index, capacity=capacity, rate=rate)
        bits += layout.redis_bytes * 8
        items -= layout.capacity
        if items <= 0:
            return bits
        index += 1
