"""`JsonlSink`: items as JSON Lines, one object per line."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
import msgspec

from ._data_sink import SinkContext
from ._errors import SinkError
from ._file import BatchFile

if TYPE_CHECKING:
    import os
    from collections.abc import Sequence

__all__ = ("JsonlSink",)


class JsonlSink(SinkContext):
    """Writes each item as one line of JSON (UTF-8) to `path`.

    Items are encoded with one reused `msgspec.json.Encoder` into one reused buffer, and each batch is
    appended with a single write in a worker thread; a batch that fails half-way is cut off again, so
    the engine's retry does not duplicate lines. The file is fsynced on `close`. Until then each
    written batch is in the operating system's hands: it survives the process being killed.

    Args:
        path: The file; created if missing.
        append: Keep what the file holds and add to it (a resumed job) instead of truncating it. An
            unfinished last line, left by a write that a crash cut short, is removed first.

    Raises:
        SinkError: the file cannot be opened or written (naming the path), or an item cannot be
            encoded as JSON (not retryable; nothing of that batch is written).

    Example:
        >>> import anyio, pathlib, tempfile
        >>> async def main(path: str) -> None:
        ...     async with JsonlSink(path) as sink:
        ...         await sink.write([{"title": "Café", "price": 3.5}, {"title": "Tea", "tags": ["hot"]}])
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     anyio.run(main, tmp + "/items.jsonl")
        ...     print(pathlib.Path(tmp, "items.jsonl").read_text("utf-8"), end="")
        {"title":"Café","price":3.5}
        {"title":"Tea","tags":["hot"]}
    """

    def __init__(self, path: str | os.PathLike[str], *, append: bool = False) -> None:
        self._file = BatchFile(path, append=append)
        self._encode_into = msgspec.json.Encoder().encode_into
        self._buffer = bytearray()
        self._lock = anyio.Lock(fast_acquire=True)

    @property
    def path(self) -> str:
        """The file written."""
        return self._file.path

    async def open(self) -> None:
        """Create or truncate the file, or open it for appending."""
        await self._file.open(drop_partial_line=self._file.append)

    async def write(self, items: Sequence[object]) -> None:
        """Encode the batch and append it with one write."""
        if not items:
            return
        async with self._lock:
            buffer = self._buffer
            try:
                buffer.clear()
            except BufferError:  # a view of the last batch is still alive (a traceback holds it)
                buffer = self._buffer = bytearray()
            encode_into = self._encode_into
            for index, item in enumerate(items):
                try:
                    encode_into(item, buffer, -1)
                except (TypeError, ValueError, msgspec.EncodeError) as exc:
                    raise SinkError(
                        f"cannot write {self.path!r}: item {index} of the batch "
                        f"({type(item).__name__}) cannot be encoded as JSON: {exc}",
                        path=self.path,
                        retryable=False,
                    ) from exc
                buffer.append(0x0A)  # b"\n"
            await self._file.write(buffer)

    async def close(self) -> None:
        """Flush the file to disk and close it."""
        await self._file.close()

    def __repr__(self) -> str:
        return f"JsonlSink({self.path!r})"
