"""Gzip found by its magic bytes, inflated incrementally in bounded steps, layer under layer."""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ("Inflater",)

GZIP_MAGIC = b"\x1f\x8b"
_STEP = 64 * 1024  # most bytes one inflate step produces: memory stays bounded whatever the ratio
_MAX_LAYERS = 2  # a .gz file served with Content-Encoding: gzip is two layers


class Inflater:
    """Pass bytes through, inflating gzip where the bytes (not the name or the headers) say gzip.

    The first two bytes decide: gzip magic starts a decompressor whose output is looked at the same way
    (a `.gz` sitemap served with `Content-Encoding: gzip` and not decoded by the client is two layers);
    anything else passes through unchanged. Output comes in pieces of at most 64 KiB per gzip step, so a
    gzip bomb is caught by the caller's size cap after one step, never inflated whole.
    """

    def __init__(self, *, depth: int = 0) -> None:
        self._depth = depth
        self._head = b""
        self._decided = False
        self._zlib: zlib._Decompress | None = None
        self._inner: Inflater | None = None

    def feed(self, data: bytes) -> Iterator[bytes]:
        """Decoded pieces of `data`; raises `zlib.error` on corrupt gzip."""
        if not self._decided:
            self._head += data
            if len(self._head) < len(GZIP_MAGIC):
                return
            data, self._head = self._head, b""
            self._decide(data)
        if self._zlib is None:
            if data:
                yield data
            return
        yield from self._inflate(data)

    def close(self) -> Iterator[bytes]:
        """The last pieces; raises `EOFError` when the gzip stream was cut short."""
        if not self._decided:
            head, self._head = self._head, b""
            self._decided = True
            if head:
                yield head
            return
        if self._zlib is not None and self._inner is not None:
            if not self._zlib.eof:
                raise EOFError("truncated gzip data (no end of stream)")
            yield from self._inner.close()

    def _decide(self, data: bytes) -> None:
        self._decided = True
        if data.startswith(GZIP_MAGIC) and self._depth < _MAX_LAYERS:
            self._zlib = zlib.decompressobj(16 + zlib.MAX_WBITS)
            self._inner = Inflater(depth=self._depth + 1)

    def _inflate(self, data: bytes) -> Iterator[bytes]:
        assert self._zlib is not None and self._inner is not None
        while True:
            if self._zlib.eof:  # a next gzip member (multi-member files) or trailing padding
                data = self._zlib.unused_data + data
                if not data.startswith(GZIP_MAGIC):
                    return  # padding after the last member is ignored, as gzip(1) does
                self._zlib = zlib.decompressobj(16 + zlib.MAX_WBITS)
            out = self._zlib.decompress(data, _STEP)
            data = self._zlib.unconsumed_tail
            if out:
                yield from self._inner.feed(out)
            if not data and len(out) < _STEP and not (self._zlib.eof and self._zlib.unused_data):
                return
