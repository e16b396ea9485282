"""`Spool`: a file of length-prefixed blobs, appended one whole blob per write.

It is the durable buffer of the sinks that can only write their file at the end (`ParquetSink`,
`XlsxSink`).
"""

from __future__ import annotations

import logging
import os
import struct
from typing import TYPE_CHECKING

import anyio.to_thread

from ._file import BatchFile

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ("Spool", "iter_blobs")

logger = logging.getLogger(__name__)

_HEADER = struct.Struct("<Q")  # the blob's length


class Spool:
    """Blobs appended to `path`; each `append` is one write that lands whole or not at all.

    A write the process did not finish (it was killed) leaves a torn last blob: `open(keep=True)` cuts it
    off, so what the spool holds is exactly the blobs whose `append` returned.

    Example:
        >>> import anyio, tempfile
        >>> async def main(path: str) -> list[bytes]:
        ...     spool = Spool(path)
        ...     await spool.open(keep=False)
        ...     await spool.append(b"one")
        ...     await spool.append(b"two")
        ...     await spool.close()
        ...     return list(iter_blobs(path))
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     anyio.run(main, tmp + "/spool")
        [b'one', b'two']
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._file = BatchFile(path, append=True)

    @property
    def size(self) -> int:
        """Bytes in the spool."""
        return self._file.size

    async def open(self, *, keep: bool) -> None:
        """Open for appending: with `keep`, after what the file holds (less a torn last blob); else empty."""
        await anyio.to_thread.run_sync(_prepare, self.path, keep)
        await self._file.open()

    async def append(self, blob: bytes) -> None:
        """Add one blob durably (in the operating system's hands when this returns).

        Raises:
            SinkError: the write failed; the spool is as it was.
        """
        await self._file.write(_HEADER.pack(len(blob)) + blob)

    async def close(self) -> None:
        """Flush to disk and close."""
        await self._file.close()

    async def remove(self) -> None:
        """Close and delete the file."""
        await self.close()
        await anyio.to_thread.run_sync(_unlink, self.path)


def iter_blobs(path: str) -> Iterator[bytes]:
    """The blobs of a spool file, in order, one at a time (a torn last blob is left out).

    Example:
        >>> list(iter_blobs("/nonexistent/spool"))
        []
    """
    try:
        file = open(path, "rb")
    except FileNotFoundError:
        return
    with file:
        while True:
            header = file.read(_HEADER.size)
            if len(header) < _HEADER.size:
                return
            (length,) = _HEADER.unpack(header)
            blob = file.read(length)
            if len(blob) < length:
                return
            yield blob


def _whole_length(path: str) -> int:
    """Bytes of `path` taken up by whole blobs."""
    end = 0
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        while end + _HEADER.size <= size:
            file.seek(end)
            (length,) = _HEADER.unpack(file.read(_HEADER.size))
            if end + _HEADER.size + length > size:
                break
            end += _HEADER.size + length
    return end


def _prepare(path: str, keep: bool) -> None:
    if not keep:
        _unlink(path)
        return
    try:
        whole = _whole_length(path)
    except FileNotFoundError:
        return
    size = os.path.getsize(path)
    if whole != size:
        logger.warning("%s: dropping %d bytes of a blob a crash cut short", path, size - whole)
        os.truncate(path, whole)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
