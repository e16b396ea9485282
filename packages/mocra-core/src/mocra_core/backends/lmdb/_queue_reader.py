"""`LmdbQueueReader`: reads an `LmdbQueue` directory while the process that uses it runs."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import anyio
import lmdb

from ..._errors import ConfigError
from ...queue._delivery import DeadLetter
from ._queue_store import LmdbStore, unpack_message

if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import TracebackType
    from typing import Self

    from ...queue._codec import Codec

__all__ = ("LmdbQueueReader", "read_dead_letters")


class LmdbQueueReader:
    """The dead letters and pending counts of an `LmdbQueue` directory, read-only.

    It takes neither the directory's lock nor its leases, so it works while a crawl in another process
    uses the queue (LMDB lets readers of other processes see the last commit; it does not open one
    directory twice in a process) and changes nothing: leases held by the running process count as
    pending, as they do in `LmdbQueue.pending`. Each call reads one consistent snapshot.

    Args:
        path: The queue's directory.
        codec: The codec the queue's messages were written with.

    Raises:
        ConfigError: `path` holds no queue (or cannot be read).

    Example:
        >>> import anyio, tempfile
        >>> from mocra_core.queue import LmdbQueue, MsgpackCodec
        >>> async def main(path):
        ...     async with LmdbQueue(path, codec=MsgpackCodec()) as queue:  # e.g. a crawl, elsewhere
        ...         await queue.publish("fetch", ["https://example.com/"])
        ...     async with LmdbQueueReader(path, codec=MsgpackCodec()) as reader:
        ...         return await reader.pending("fetch"), await reader.dead_letters("fetch")
        >>> with tempfile.TemporaryDirectory() as path:
        ...     anyio.run(main, path)
        (1, [])
    """

    def __init__(self, path: str | os.PathLike[str], *, codec: Codec) -> None:
        self.path = os.fspath(path)
        self._codec = codec
        try:
            self._store: LmdbStore | None = LmdbStore(self.path, map_size=0, readonly=True)
        except lmdb.Error as exc:
            raise ConfigError("queue.path", f"cannot read a queue in {self.path!r}: {exc}") from None

    def __repr__(self) -> str:
        return f"<LmdbQueueReader {self.path!r}{' closed' if self._store is None else ''}>"

    def _open(self) -> LmdbStore:
        if self._store is None:
            raise anyio.ClosedResourceError
        return self._store

    async def dead_letters(self, topic: str, *, limit: int = 100) -> Sequence[DeadLetter]:
        """Up to `limit` dead letters of `topic`, oldest first (as `LmdbQueue.dead_letters`)."""
        return read_dead_letters(self._open(), self._codec, topic, limit)

    async def pending(self, topic: str) -> int:
        """Messages of `topic` ready, delayed or leased, at the last commit."""
        return self._open().pending_count(topic.encode() + b"\0")

    async def aclose(self) -> None:
        """Close the environment; idempotent."""
        if self._store is not None:
            self._store.close()
            self._store = None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


def read_dead_letters(store: LmdbStore, codec: Codec, topic: str, limit: int) -> list[DeadLetter]:
    """Up to `limit` dead letters of `topic` in `store`, oldest first; undecodable payloads as bytes."""
    letters = []
    for seq, attempt, failed_at, reason, blob in store.dead_letters(topic.encode() + b"\0", limit):
        created, priority, key, raw = unpack_message(blob)
        try:
            payload = codec.decode(raw)
        except Exception:
            payload = raw
        letters.append(
            DeadLetter(str(seq), topic, payload, key, attempt, reason, failed_at, priority, created)
        )
    return letters
