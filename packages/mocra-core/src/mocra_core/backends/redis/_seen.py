"""`RedisSeenSet`: a seen-set in one Redis set, shared by the workers of a job on any number of hosts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from redis.exceptions import RedisError

from ...dedup._seen_set import check_fingerprints
from ._connection import redis_failure
from ._script_seen import ScriptSeenSet

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ("RedisSeenSet",)

# ARGV[1] is the batch's fingerprints end to end (16 bytes each): one argument to encode, one string
# back ('1' new, '0' seen, per fingerprint), which costs the client far less than 100 of each. One SADD
# per member, in order, so a duplicate later in the batch gets '0', as the protocol wants.
_ADD_IF_ABSENT = """
local batch, new = ARGV[1], {}
for i = 1, #batch, 16 do new[#new + 1] = redis.call('SADD', KEYS[1], string.sub(batch, i, i + 15)) end
return table.concat(new)
"""


class RedisSeenSet(ScriptSeenSet):
    """A seen-set kept in the Redis set `{namespace}:{key}`, so workers on many hosts dedup together.

    `add_if_absent` sends a whole batch as one Lua script (one round trip, the fingerprints joined into
    one argument) that runs `SADD` per fingerprint and returns which were new; Redis runs a script
    alone, so concurrent batches from any number of workers agree (each fingerprint is new to exactly
    one of them). Batches added concurrently in one process while a script is on the wire share the
    next script call. `contains` is `SISMEMBER`, `count` `SCARD`. Measured against Redis 7.0 on the same
    2-core VM (redis-py 8 without hiredis): ~105 µs for a batch of 1 (redis-py's own round trip is
    ~85-100 µs), ~3.4 µs per fingerprint in batches of 100 (~2.3 when all were seen before).

    Memory: each member is the 16-byte fingerprint plus Redis's per-member overhead in a hash-table
    set (dict entry, sds header, bucket array): 64 bytes per fingerprint in all (`MEMORY USAGE` of a
    set of a million, Redis 7.0), so ~64 MB per million requests. The set lives as long as the key;
    delete it (or pick a new namespace) to start a crawl afresh.

    Failures: nothing is retried (a batch whose reply was lost may have been added, and a retry
    would report its fingerprints as seen). A call that cannot reach Redis raises
    `mocra_core.BackendUnavailable`, another Redis failure `mocra_core.BackendError`, and, as the
    protocol allows, the caller must then assume none of the batch was recorded. Cancelled mid-call,
    the batch may or may not have been added. `async with` pings first, so an unreachable server
    fails at start; calls after `aclose` raise `SeenSetError`.

    Args:
        url: `redis://[user:password@]host:port/db`, `rediss://…` for TLS, or `unix://path`.
        namespace: Prefix of the key, so jobs can share a server.
        key: The set's name under `namespace`.
        client: A client of `url` to use instead of one of its own (`RedisClients`: a run's, shared by
            its stores on that server); `aclose` leaves it open.

    Example:
        >>> import anyio, redis, uuid
        >>> namespace = f"example-{uuid.uuid4().hex}"
        >>> async def main() -> tuple[list[bool], bool, int]:
        ...     async with RedisSeenSet("redis://127.0.0.1:6379/0", namespace=namespace) as seen:
        ...         new = await seen.add_if_absent([b"a" * 16, b"b" * 16, b"a" * 16])
        ...         return new, await seen.contains(b"b" * 16), await seen.count()
        >>> anyio.run(main)
        ([True, True, False], True, 2)
        >>> redis.Redis(port=6379).delete(f"{namespace}:seen")
        1
    """

    __slots__ = ()

    def __init__(
        self, url: str, *, namespace: str = "mocra", key: str = "seen", client: Redis | None = None
    ) -> None:
        super().__init__(url, namespace=namespace, key=key, client=client, script=_ADD_IF_ABSENT)

    async def contains(self, fingerprint: bytes) -> bool:
        """Return whether `fingerprint` is in the set."""
        check_fingerprints([fingerprint])
        try:
            return bool(await self._open().sismember(self._key, fingerprint))  # type: ignore[arg-type]
        except RedisError as exc:
            raise redis_failure(self._url, exc) from exc

    async def count(self) -> int:
        """Return the number of fingerprints in the set."""
        try:
            return await self._open().scard(self._key)
        except RedisError as exc:
            raise redis_failure(self._url, exc) from exc
