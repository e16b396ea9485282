"""Bounded body decoding: decompress while streaming and stop at the size cap (gzip bombs included).

The transports hand over the raw (still compressed) bytes; this module inflates them with
`zlib.decompressobj(...).decompress(chunk, max_length)`, so no call ever produces more than the bytes left
under the cap plus one: a 1 GB gzip bomb costs at most `max_body_bytes` of memory before `BodyTooLarge`.
"""

from __future__ import annotations

import importlib
import zlib
from typing import TYPE_CHECKING, Any, Protocol

from .._errors import BodyTooLarge, DownloadError

if TYPE_CHECKING:
    from ..http import Request

__all__ = ("ACCEPT_ENCODING", "BodyDecoder")

_brotli: Any
try:  # br only with a brotli that can bound its output (Brotli >= 1.2); never advertised otherwise
    _brotli = importlib.import_module("brotli")
    _HAS_BROTLI = hasattr(_brotli.Decompressor, "can_accept_more_data")
except ImportError:  # pragma: no cover - depends on the environment
    _brotli = None
    _HAS_BROTLI = False

_DECODE_ERRORS: tuple[type[Exception], ...] = (zlib.error, _brotli.error) if _HAS_BROTLI else (zlib.error,)

ACCEPT_ENCODING = "gzip, deflate, br" if _HAS_BROTLI else "gzip, deflate"
"""The `Accept-Encoding` the downloader sends: exactly what `BodyDecoder` can undo."""

_GZIP_MAGIC = b"\x1f\x8b"


class _Stage(Protocol):
    def decode(self, data: bytes, limit: int) -> bytes: ...


class _ZlibStage:
    """gzip (`wbits=31`) or deflate; deflate sniffs zlib-wrapped (RFC) versus raw (common in the wild)."""

    __slots__ = ("_d", "_head", "_wbits")

    def __init__(self, wbits: int | None) -> None:
        self._wbits = wbits
        self._head = b""
        self._d = zlib.decompressobj(wbits) if wbits is not None else None

    def decode(self, data: bytes, limit: int) -> bytes:
        if self._d is None:  # deflate: wait for the 2-byte zlib header to decide
            data = self._head + data
            if len(data) < 2:
                self._head = data
                return b""
            is_zlib = data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0
            self._wbits = 15 if is_zlib else -15
            self._d = zlib.decompressobj(self._wbits)
        d = self._d
        out = d.decompress(data, limit)
        # concatenated gzip members (RFC 1952 allows them); anything else after the end is ignored
        while d.eof and d.unused_data[:2] == _GZIP_MAGIC and self._wbits == 31 and len(out) < limit:
            rest = d.unused_data
            d = self._d = zlib.decompressobj(31)
            out += d.decompress(rest, limit - len(out))
        return out


class _BrotliStage:
    __slots__ = ("_d",)

    def __init__(self) -> None:
        self._d = _brotli.Decompressor()

    def decode(self, data: bytes, limit: int) -> bytes:
        out: bytes = self._d.process(data, output_buffer_limit=limit)
        while len(out) < limit and not self._d.can_accept_more_data():
            more: bytes = self._d.process(b"", output_buffer_limit=limit - len(out))
            if not more:
                break
            out += more
        return out


def _stage(encoding: str) -> _Stage | None:
    if encoding in ("gzip", "x-gzip"):
        return _ZlibStage(31)
    if encoding == "deflate":
        return _ZlibStage(None)
    if encoding == "br" and _HAS_BROTLI:
        return _BrotliStage()
    return None


class BodyDecoder:
    """Collects one response body chunk by chunk, decoding `Content-Encoding` and enforcing the cap.

    Encodings it cannot undo (or `identity`) leave the body as received; the cap then applies to the raw
    bytes. Truncated compressed streams yield what could be decoded (as browsers do).

    Args:
        content_encoding: The response's `Content-Encoding` header ("" when absent).
        max_bytes: Cap on the decoded body.
        request: The request, named in errors.

    Raises:
        BodyTooLarge: from `feed`, as soon as the decoded body would pass `max_bytes`.
        DownloadError: from `feed`, when the compressed data is corrupt.

    Example:
        >>> import gzip
        >>> from mocra_core.http import Request
        >>> decoder = BodyDecoder("gzip", 100, Request("https://example.com/"))
        >>> decoder.feed(gzip.compress(b"hello"))
        >>> decoder.finish()
        b'hello'
        >>> BodyDecoder("gzip", 100, Request("https://example.com/")).feed(gzip.compress(bytes(1000)))
        Traceback (most recent call last):
        ...
        mocra_core._errors.BodyTooLarge: body of https://example.com/ is over max_body_bytes=100 (after ...
    """

    __slots__ = ("_chunks", "_max", "_request", "_size", "_stages")

    def __init__(self, content_encoding: str, max_bytes: int, request: Request) -> None:
        self._max = max_bytes
        self._request = request
        self._size = 0
        self._chunks: list[bytes] = []
        self._stages: list[_Stage] = []
        if content_encoding:
            codings = [c.strip().lower() for c in content_encoding.split(",")]
            stages = [_stage(c) for c in reversed(codings) if c and c != "identity"]
            if all(s is not None for s in stages):  # one unknown coding: keep the body as received
                self._stages = [s for s in stages if s is not None]

    def feed(self, chunk: bytes) -> None:
        """Add one raw chunk; raises as soon as the decoded total would pass the cap."""
        if self._stages:
            limit = self._max - self._size + 1
            try:
                for stage in self._stages:
                    chunk = stage.decode(chunk, limit)
                    if len(chunk) >= limit:
                        break
            except _DECODE_ERRORS as exc:
                raise DownloadError(
                    f"cannot decode the body of {self._request.url}: {exc}", request=self._request
                ) from exc
        self._size += len(chunk)
        if self._size > self._max:
            raise self.too_large()
        if chunk:
            self._chunks.append(chunk)

    def too_large(self, declared: int | None = None) -> BodyTooLarge:
        """The error for a body over the cap (`declared`: a `Content-Length` already known to be over)."""
        what = f"declares {declared} bytes, over" if declared is not None else "is over"
        return BodyTooLarge(
            f"body of {self._request.url} {what} max_body_bytes={self._max} "
            f"(after decompression; raise download.max_body_bytes to accept it)",
            request=self._request,
            received=self._size,
        )

    def finish(self) -> bytes:
        """The decoded body so far (call after the last chunk)."""
        chunks = self._chunks
        if len(chunks) == 1:
            return chunks[0]
        return b"".join(chunks)
