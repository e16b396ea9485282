"""`BatchFile`: an append-only file written one whole batch at a time, from a worker thread."""

from __future__ import annotations

import errno
import io
import logging
import os
import stat
from typing import TYPE_CHECKING, TypeVar

import anyio
import anyio.to_thread

from ._errors import SinkError

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ("BatchFile",)

logger = logging.getLogger(__name__)

_T = TypeVar("_T")
_TAIL_CHUNK = 1 << 16


INLINE_WRITE_BYTES = 64 * 1024
"""Writes smaller than this go straight to a regular file from the event loop (see `write`)."""


class BatchFile:
    """The file behind `JsonlSink` and `CsvSink`.

    Each `write` is one unbuffered write of the whole batch (inline when small, else in a worker thread).
    If it fails part-way, the file is truncated back to where the batch began, so retrying does not duplicate
    anything. `close` fsyncs. OS errors become `SinkError` naming the path.
    """

    def __init__(self, path: str | os.PathLike[str], *, append: bool) -> None:
        self.path = os.fspath(path)
        self.append = append
        self._file: io.FileIO | None = None
        self._size = 0
        self._regular = False

    @property
    def is_open(self) -> bool:
        """Whether `open` succeeded and `close` has not been called."""
        return self._file is not None

    @property
    def size(self) -> int:
        """Bytes in the file (kept up to date by `write`)."""
        return self._size

    async def open(self, *, drop_partial_line: bool = False) -> None:
        """Open for appending (`append=True`) or truncate the file.

        With `drop_partial_line`, a last line that has no newline (the tail of a write that a crash
        interrupted) is cut off.
        """
        self._file = await self._run("open", self._open_sync, drop_partial_line)

    async def write(self, data: bytes | bytearray) -> None:
        """Append `data` entirely, or leave the file as it was and raise `SinkError`.

        A small write (under `INLINE_WRITE_BYTES`) to a regular file lands in the page cache in a few
        microseconds, less than a hop to a worker thread (~100 µs), so it is done on the event loop; larger
        writes, pipes and terminals go through a thread.
        """
        if self._file is None:
            raise SinkError(f"{self.path!r} is not open", path=self.path, retryable=False)
        if len(data) < INLINE_WRITE_BYTES and self._regular:
            try:
                self._write_sync(self._file, data)
            except OSError as exc:
                raise SinkError(f"cannot write {self.path!r}: {exc.strerror or exc}", path=self.path) from exc
            return
        await self._run("write", self._write_sync, self._file, data)

    async def read_first_line(self) -> str:
        """Return the file's first line without its line ending, or '' if the file is empty.

        Raises:
            UnicodeDecodeError: the line is not UTF-8.
        """
        return await self._run("read", self._read_first_line_sync)

    async def close(self) -> None:
        """Flush to disk and close; calling it again does nothing."""
        file, self._file = self._file, None
        if file is not None:
            with anyio.CancelScope(shield=True):
                await self._run("close", _fsync_and_close, file)

    async def _run(self, action: str, fn: Callable[..., _T], *args: object) -> _T:
        try:
            return await anyio.to_thread.run_sync(fn, *args)
        except OSError as exc:
            raise SinkError(f"cannot {action} {self.path!r}: {exc.strerror or exc}", path=self.path) from exc

    def _open_sync(self, drop_partial_line: bool) -> io.FileIO:
        flags = os.O_RDWR | os.O_CREAT | (0 if self.append else os.O_TRUNC)
        file = io.FileIO(os.open(self.path, flags, 0o666), "r+")
        self._regular = stat.S_ISREG(os.fstat(file.fileno()).st_mode)
        try:
            if not file.seekable():  # a pipe or a terminal (/dev/stdout): just write to it
                self._size = 0
                return file
            self._size = file.seek(0, os.SEEK_END)
            if drop_partial_line and self._size:
                keep = _end_of_last_line(file, self._size)
                if keep != self._size:
                    logger.warning(
                        "%s: dropping %d bytes of an unfinished last line", self.path, self._size - keep
                    )
                    file.truncate(keep)
                    self._size = keep
                file.seek(self._size)
        except BaseException:
            file.close()
            raise
        return file

    def _write_sync(self, file: io.FileIO, data: bytes | bytearray) -> None:
        with memoryview(data) as view:
            done = 0
            try:
                while done < len(view):
                    with view[done:] as rest:
                        done += file.write(rest) or 0  # a regular file never answers None
            except BaseException:
                if file.seekable() and file.tell() != self._size:
                    _restore(file, self._size)
                raise
        self._size += done

    def _read_first_line_sync(self) -> str:
        with open(self.path, "rb") as file:
            return file.readline().decode("utf-8-sig").rstrip("\r\n")


def _end_of_last_line(file: io.FileIO, size: int) -> int:
    """Return the offset just past the file's last newline (0 if there is none)."""
    end = size
    while end > 0:
        start = max(0, end - _TAIL_CHUNK)
        file.seek(start)
        chunk = file.read(end - start)
        newline = chunk.rfind(b"\n")
        if newline >= 0:
            return start + newline + 1
        end = start
    return 0


def _restore(file: io.FileIO, size: int) -> None:
    try:
        file.truncate(size)
        file.seek(size)
    except OSError:
        logger.exception("%s: could not cut a half-written batch back to %d bytes", file.name, size)


def _fsync_and_close(file: io.FileIO) -> None:
    try:
        os.fsync(file.fileno())
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.EROFS):  # a pipe or device that cannot sync
            raise
    finally:
        file.close()
