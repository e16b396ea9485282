"""`ScriptSeenSet`: what the Redis seen sets share, a batch added by one Lua script per round trip."""

from __future__ import annotations

from typing import TYPE_CHECKING

from redis.exceptions import RedisError

from ..._errors import redact
from ..._gather import Gather
from ...dedup._errors import SeenSetError
from ...dedup._seen_set import check_fingerprints
from ._connection import RedisResource, connect_redis, redis_failure

if TYPE_CHECKING:
    from collections.abc import Sequence

    from redis.asyncio import Redis

__all__ = ("ScriptSeenSet",)

_NEW = ord("1")


class ScriptSeenSet(RedisResource):
    """The base of the Redis seen sets: `add_if_absent` by one script, concurrent batches sharing a call.

    The script gets the key `{namespace}:{key}`, then the batch's fingerprints end to end (16 bytes
    each) and `args`, and returns one byte per fingerprint, `'1'` new or `'0'` seen. Subclasses add
    `contains` and `count`. Calls after `aclose` raise `SeenSetError`.

    Args:
        url: The server's URL (redacted in messages).
        namespace: Prefix of the keys.
        key: The series' name under `namespace`.
        client: A client of `url` to use instead of one of its own; `aclose` leaves it open.
        script: The Lua source of the add.
        args: The script's arguments after the batch.
    """

    __slots__ = ("_add", "_adds", "_args", "_closed", "_key", "_lent", "_redis", "_url", "name")

    def __init__(
        self,
        url: str,
        *,
        namespace: str,
        key: str,
        client: Redis | None,
        script: str,
        args: tuple[bytes, ...] = (),
    ) -> None:
        if not namespace or not key:
            raise ValueError("namespace and key must not be empty")
        self._url = url
        self.name = f"{namespace}:{key}"
        self._key = self.name.encode()
        self._args = args
        self._redis = client if client is not None else connect_redis(url)
        self._lent = client is not None
        self._add = self._redis.register_script(script)
        self._adds: Gather[bytes, bytes] = Gather(self._add_all)
        self._closed = False

    def __repr__(self) -> str:
        return f"{type(self).__name__}({redact(self._url)!r}, key={self.name!r})"

    def _open(self) -> Redis:
        if self._closed:
            raise SeenSetError(f"{redact(self._url)} {self.name}", "closed")
        return self._redis

    async def add_if_absent(self, fingerprints: Sequence[bytes]) -> list[bool]:
        """Add the fingerprints in one script; return, per fingerprint, whether it was new.

        Raises:
            ValueError: a fingerprint is not 16 bytes long (nothing is added).
            BackendError: Redis failed or cannot be reached (assume nothing was added).
        """
        check_fingerprints(fingerprints)
        if not fingerprints:
            return []
        self._open()
        try:
            new = await self._adds(b"".join(fingerprints))
        except RedisError as exc:
            raise redis_failure(self._url, exc) from exc
        return [n == _NEW for n in new]

    async def _add_all(self, batches: list[bytes]) -> list[bytes]:
        """One script for concurrent batches; each gets its part of the answer (one byte per fingerprint)."""
        new: bytes = await self._add([self._key], [b"".join(batches), *self._args])
        parts, start = [], 0
        for batch in batches:
            end = start + len(batch) // 16
            parts.append(new[start:end])
            start = end
        return parts
