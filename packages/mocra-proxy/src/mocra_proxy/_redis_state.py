"""`RedisState`: the `PoolState` of pools in many processes, kept in Redis (extra `mocra-proxy[redis]`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Self

from ._health import ProxyHealth
from ._merge import MAX_BANS
from ._provider import redact_url
from ._redis_lua import HEALTH_FIELDS, MERGE_HEALTH, MERGE_TIER
from ._state_error import StateError
from ._tiers import DomainTier

if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import TracebackType

    from redis.asyncio import Redis

__all__ = ("RedisState",)

EXTRA = "pip install 'mocra-proxy[redis]'"


class RedisState:
    """`PoolState` in Redis: every pool given a `RedisState` with the same `namespace` shares state.

    Each proxy's record is a hash `mocra-proxy:<namespace>:health:<proxy id>` (the id carries no
    password); each domain's tier a hash `…:tier:<domain>` with its ban times in `…:bans:<domain>`.
    A save runs one Lua script, so two processes reporting the same proxy at once merge their records
    (`merge_health`: a ban or cooldown is never lost) instead of the last one winning. A `load` is one
    round trip (a pipeline of `HMGET`s), and every save renews the keys' `ttl`, so the records of a job
    that stopped go away on their own.

    Args:
        client_or_url: A `redis://` / `rediss://` / `unix://` URL (the state then owns, and closes, its
            client) or a `redis.asyncio.Redis` client (left open).
        namespace: One per job or pool family; pools with different namespaces share nothing.
        ttl: Seconds a record lives after its last save (`None`: forever). Keep it above the pool's
            `max_cooldown`, or a long cooldown may expire with its record.

    Raises:
        StateError: redis-py is not installed (the message names `mocra-proxy[redis]`); on `load`
            and saves, Redis failed (the URL in the message has no credentials).

    Example:
        >>> import anyio
        >>> from mocra_proxy import ProxyHealth
        >>> async def demo() -> int:
        ...     async with RedisState("redis://127.0.0.1:6379/0", namespace="doctest-h9") as state:
        ...         await state.save_health("http://10.0.0.1:8080", ProxyHealth(failures=2, last_used=1.0))
        ...         health, _ = await state.load(["http://10.0.0.1:8080"], [])
        ...         await state.clear()
        ...         return health["http://10.0.0.1:8080"].failures
        >>> anyio.run(demo)
        2
    """

    def __init__(self, client_or_url: str | Redis, *, namespace: str, ttl: float | None = 86_400.0) -> None:
        if not namespace:
            raise ValueError("RedisState namespace must not be empty")
        if ttl is not None and ttl <= 0:
            raise ValueError(f"RedisState ttl must be positive seconds or None, got {ttl!r}")
        url = client_or_url if isinstance(client_or_url, str) else None
        self.store = redact_url(url) if url is not None else _client_store(client_or_url)
        try:
            from redis.asyncio import Redis
            from redis.exceptions import RedisError
        except ModuleNotFoundError as exc:
            if exc.name is None or exc.name.partition(".")[0] not in ("redis", "hiredis"):
                raise
            raise StateError(self.store, f"RedisState needs redis-py: {EXTRA}") from exc
        self._errors: tuple[type[BaseException], ...] = (RedisError, OSError)
        if url is not None:
            try:
                self._client: Redis = Redis.from_url(url, socket_connect_timeout=5.0)
            except ValueError as exc:
                raise StateError(self.store, f"bad Redis URL: {exc}") from None
        else:
            assert not isinstance(client_or_url, str)
            self._client = client_or_url
        self._owns_client = url is not None
        self.namespace = namespace
        self._prefix = f"mocra-proxy:{namespace}:"
        self._ttl_ms = 0 if ttl is None else max(1, round(ttl * 1000))
        self._merge_health = self._client.register_script(MERGE_HEALTH)
        self._merge_tier = self._client.register_script(MERGE_TIER)

    async def load(
        self, proxy_ids: Sequence[str], domains: Sequence[str]
    ) -> tuple[dict[str, ProxyHealth], dict[str, DomainTier]]:
        """The stored records of those proxies and domains, read in one round trip."""
        if not proxy_ids and not domains:
            return {}, {}
        try:
            async with self._client.pipeline(transaction=False) as pipe:
                for pid in proxy_ids:
                    pipe.hmget(self._key("health", pid), list(HEALTH_FIELDS))
                for domain in domains:
                    pipe.hmget(self._key("tier", domain), ["tier", "since"])
                    pipe.zrange(self._key("bans", domain), 0, -1)
                replies: list[Any] = await pipe.execute()
        except self._errors as exc:
            raise self._failure("load", exc) from exc
        health = {
            pid: _health(reply) for pid, reply in zip(proxy_ids, replies, strict=False) if None not in reply
        }
        tiers: dict[str, DomainTier] = {}
        for i, domain in enumerate(domains):
            head, bans = replies[len(proxy_ids) + 2 * i], replies[len(proxy_ids) + 2 * i + 1]
            if None not in head:
                tier, since = (_text(v) for v in head)
                tiers[domain] = DomainTier(
                    tier=int(tier), since=float(since), bans=[float(_text(b)) for b in bans]
                )
        return health, tiers

    async def save_health(self, proxy_id: str, health: ProxyHealth) -> None:
        """Merge the record into the stored one, atomically (`merge_health`)."""
        fields = [repr(getattr(health, name)) for name in HEALTH_FIELDS[:-1]] + [
            "1" if health.evicted else "0"
        ]
        try:
            await self._merge_health(keys=[self._key("health", proxy_id)], args=[self._ttl_ms, *fields])
        except self._errors as exc:
            raise self._failure("save a proxy's health", exc) from exc

    async def save_tier(self, domain: str, tier: DomainTier) -> None:
        """Merge the domain's tier into the stored one, atomically (`merge_tier`)."""
        keys = [self._key("tier", domain), self._key("bans", domain)]
        args: list[str | int] = [self._ttl_ms, str(tier.tier), repr(tier.since), MAX_BANS]
        args += [repr(t) for t in tier.bans]
        try:
            await self._merge_tier(keys=keys, args=args)
        except self._errors as exc:
            raise self._failure("save a domain's tier", exc) from exc

    async def clear(self) -> int:
        """Delete every record of this namespace (e.g. when its job is done); returns how many keys."""
        try:
            keys = [key async for key in self._client.scan_iter(match=self._prefix + "*", count=500)]
            return int(await self._client.delete(*keys)) if keys else 0
        except self._errors as exc:
            raise self._failure("clear", exc) from exc

    async def aclose(self) -> None:
        """Close the client if this state opened it (from a URL)."""
        if self._owns_client:
            await self._client.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def _key(self, kind: str, name: str) -> str:
        return f"{self._prefix}{kind}:{name}"

    def _failure(self, action: str, exc: BaseException) -> StateError:
        return StateError(
            self.store, f"{action} (namespace {self.namespace!r}) failed: {exc or type(exc).__name__}"
        )

    def __repr__(self) -> str:
        return f"RedisState({self.store!r}, namespace={self.namespace!r})"


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _health(reply: Sequence[bytes | str]) -> ProxyHealth:
    values = dict(zip(HEALTH_FIELDS, (_text(v) for v in reply), strict=True))
    return ProxyHealth(
        successes=int(values["successes"]),
        failures=int(values["failures"]),
        consecutive_errors=int(values["consecutive_errors"]),
        cooldowns=int(values["cooldowns"]),
        cooldown_until=float(values["cooldown_until"]),
        latency=float(values["latency"]),
        last_used=float(values["last_used"]),
        evicted=values["evicted"] == "1",
    )


def _client_store(client: Any) -> str:
    """Where a client points, without credentials."""
    kwargs = getattr(getattr(client, "connection_pool", None), "connection_kwargs", {})
    if "path" in kwargs:
        return f"unix://{kwargs['path']}"
    return f"redis://{kwargs.get('host', '?')}:{kwargs.get('port', '?')}/{kwargs.get('db', 0)}"
