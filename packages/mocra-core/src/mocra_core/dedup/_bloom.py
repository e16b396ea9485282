"""The layout of a scalable Bloom filter: how many bits and hashes each of its filters has.

A scalable Bloom filter (Almeida et al., "Scalable Bloom Filters", 2007) is a series of plain Bloom
filters. Filter `i` holds `capacity * 2**i` fingerprints at the error rate `p * 2**-(i + 1)`, so the rates
of the whole series add up to less than `p`, however many filters it grows to. A fingerprint is in the
set when it is in any filter; a new one goes into the last, and a full last filter gets a successor.
`MemoryBloomSeenSet` (rbloom filters) and `RedisBloomSeenSet` (Redis strings, Lua) both follow it; the
Redis script computes the same figures (`_bloom_lua.py`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

__all__ = ("MAX_FILTER_BITS", "FilterLayout", "filter_layout", "series_bits")

MAX_FILTER_BITS = 1 << 32
"""A filter's bits at most: a Redis string holds 2**32 bits (512 MiB); a longer series adds filters."""

_LN2_SQUARED = math.log(2) ** 2


class FilterLayout(NamedTuple):
    """One filter of the series: fingerprints it holds, its error rate, its bits and its hash count."""

    capacity: int
    rate: float
    bits: int
    hashes: int


def filter_layout(index: int, *, capacity: int, rate: float) -> FilterLayout:
    """The layout of filter `index` (0 = the first) of a series of `capacity` and overall `rate`.

    The optimal sizes for n items at error rate p: m = ceil(-n ln p / ln² 2) bits and k = round(-log2 p)
    hashes (at least 1). A filter that would pass `MAX_FILTER_BITS` holds fewer fingerprints instead.

    Example:
        >>> filter_layout(0, capacity=1_000_000, rate=0.001)
        FilterLayout(capacity=1000000, rate=0.0005, bits=15820283, hashes=11)
        >>> filter_layout(1, capacity=1_000_000, rate=0.001).capacity
        2000000
    """
    p = rate * 0.5 ** (index + 1)
    n = capacity * 2**index
    bits = math.ceil(-n * math.log(p) / _LN2_SQUARED)
    if bits > MAX_FILTER_BITS:
        bits = MAX_FILTER_BITS
        n = math.floor(bits * _LN2_SQUARED / -math.log(p))
    return FilterLayout(n, p, bits, max(1, round(-math.log2(p))))


def series_bits(items: int, *, capacity: int, rate: float) -> int:
    """The bits a series allocates to hold `items` fingerprints (every filter is allocated whole).

    Example:
        >>> series_bits(100_000_000, capacity=100_000_000, rate=0.001) / 8e6  # MB
        197.753532625
    """
    bits, index = 0, 0
    while True:
        layout = filter_layout(index, capacity=capacity, rate=rate)
        bits += layout.bits
        items -= layout.capacity
        if items <= 0:
            return bits
        index += 1
