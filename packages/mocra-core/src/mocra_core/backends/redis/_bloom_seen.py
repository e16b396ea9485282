"""`RedisBloomSeenSet`: an approximate seen set on Redis, a scalable Bloom filter kept by Lua scripts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from redis.exceptions import RedisError

from ...dedup._bloom import filter_layout
from ...dedup._seen_set import check_fingerprints
from ._bloom_lua import ADD_IF_ABSENT, CONTAINS
from ._connection import redis_failure
from ._script_seen import ScriptSeenSet

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ("RedisBloomSeenSet",)


class RedisBloomSeenSet(ScriptSeenSet):
    """A seen set on Redis that may take a new fingerprint for seen, never the reverse; shared by workers.

    A scalable Bloom filter (`mocra_core.dedup._bloom`): filters of bits in Redis strings
    (`{namespace}:{key}:<filter>:<segment>`, 1 MiB each at most), the first for `capacity` fingerprints,
    each next one for twice as many at half the error rate, so the chance that a new fingerprint is
    answered `False` stays below `false_positive_rate` at any size; the hash `{namespace}:{key}` holds
    the parameters and the fill. It needs no Redis module (the
    server here has no RedisBloom): `add_if_absent` is one Lua script per batch (the fingerprints joined
    into one argument, `BITFIELD` reads and writes inside), so a batch is one round trip and atomic, and
    concurrent workers agree on which of them saw a fingerprint first; concurrent batches of one process
    share a call. The first call fixes `capacity` and the rate for the key; later ones with other
    values use the key's.

    Memory: each filter is allocated whole when it starts, ~1.98 bytes per fingerprint of its capacity
    at 0.1 % (15.8 bits, in whole 1 MiB segments): 100 million URLs fit in 198.2 MB with
    `capacity=100_000_000` (`MEMORY USAGE`), against 64 bytes per fingerprint for `RedisSeenSet`. A
    crawl that outgrows `capacity` costs ~1.5-3× its URLs' share (the filters double). Each batch costs
    Redis ~10 µs per fingerprint (`RedisSeenSet`: ~2.5). Measured with
    `benchmarks/bench_seen_set_redis.py`.

    Failures and cancellation are as for `RedisSeenSet`: nothing is retried, a failed call raises
    `BackendUnavailable` or `BackendError` and the caller assumes none of the batch was recorded.

    Args:
        url: `redis://[user:password@]host:port/db`, `rediss://…` for TLS, or `unix://path`.
        namespace: Prefix of the keys, so jobs can share a server.
        key: The series' name under `namespace`.
        capacity: Fingerprints the first filter holds at its share of the rate.
        false_positive_rate: Bound on the chance that a new fingerprint is answered `False`.
        client: A client of `url` to use instead of one of its own; `aclose` leaves it open.

    Example:
        >>> import anyio, redis, uuid
        >>> namespace = f"example-{uuid.uuid4().hex}"
        >>> async def main() -> tuple[list[bool], bool, int]:
        ...     async with RedisBloomSeenSet("redis://127.0.0.1:6379/0", namespace=namespace) as seen:
        ...         new = await seen.add_if_absent([b"a" * 16, b"b" * 16, b"a" * 16])
        ...         return new, await seen.contains(b"b" * 16), await seen.count()
        >>> anyio.run(main)
        ([True, True, False], True, 2)
        >>> redis.Redis(port=6379).delete(*(f"{namespace}:seen{part}" for part in ("", ":0:0", ":0:1")))
        3
    """

    __slots__ = ("_contains",)

    def __init__(
        self,
        url: str,
        *,
        namespace: str = "mocra",
        key: str = "seen",
        capacity: int = 1_000_000,
        false_positive_rate: float = 0.001,
        client: Redis | None = None,
    ) -> None:
        if capacity < 1 or not 0 < false_positive_rate <= 0.5:
            raise ValueError(
                f"expected capacity >= 1 and 0 < false_positive_rate <= 0.5, "
                f"got {capacity!r} and {false_positive_rate!r}"
            )
        args = (str(capacity).encode(), repr(float(false_positive_rate)).encode())
        super().__init__(url, namespace=namespace, key=key, client=client, script=ADD_IF_ABSENT, args=args)
        self._contains = self._redis.register_script(CONTAINS)

    async def contains(self, fingerprint: bytes) -> bool:
        """Return whether `fingerprint` is (probably) in the set: `False` is certain, `True` may be wrong."""
        check_fingerprints([fingerprint])
        try:
            return bool(await self._contains([self._key], [fingerprint], client=self._open()))
        except RedisError as exc:
            raise redis_failure(self._url, exc) from exc

    async def count(self) -> int:
        """Return how many fingerprints were answered new."""
        try:
            value = await self._open().hget(self._key, "count")
        except RedisError as exc:
            raise redis_failure(self._url, exc) from exc
        return int(value or 0)

    async def keys(self) -> list[bytes]:
        """Return the series' keys: its hash, then each filter's segments."""
        try:
            stored = await self._open().hmget(self._key, ["capacity", "rate", "filters"])
        except RedisError as exc:
            raise redis_failure(self._url, exc) from exc
        if stored[0] is None or stored[1] is None:
            return []
        capacity, rate, filters = int(stored[0]), float(stored[1]), int(stored[2] or 0)
        keys = [self._key]
        for i in range(filters):
            segments = filter_layout(i, capacity=capacity, rate=rate).segments
            keys += [b"%s:%d:%d" % (self._key, i, s) for s in range(segments)]
        return keys

    async def memory_usage(self) -> int:
        """Return the bytes Redis reports (`MEMORY USAGE`) for the series' keys."""
        keys = await self.keys()
        try:
            redis = self._open()
            return sum([int(await redis.memory_usage(key, samples=0) or 0) for key in keys])
        except RedisError as exc:
            raise redis_failure(self._url, exc) from exc
