"""`RedisDomainGate`: the `DomainGate` of workers on any number of hosts, in one Redis server."""

from __future__ import annotations

import itertools
import math
import uuid
from typing import TYPE_CHECKING

from redis.exceptions import RedisError

from ..._errors import BackendError, redact
from ...download._gate import Ticket, check_enter
from ._connection import RedisResource, connect_redis, redis_failure

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ("RedisDomainGate",)

# KEYS[1]: the domain's holders, a sorted set of holder -> expiry; KEYS[2]: the domain's next start.
# ARGV: limit, gap (µs), ttl (µs), holder. Times are integer microseconds of the server's clock (exact
# in a double), so workers' clocks do not matter. Returns {1, µs until the reserved start} for a ticket,
# {0, µs until the earliest holder expires} when the domain is full.
_ENTER = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, tonumber(first[2]) - now}
end
local start = math.max(now, tonumber(redis.call('GET', KEYS[2]) or '0'))
local expiry = start + tonumber(ARGV[3])
redis.call('ZADD', KEYS[1], string.format('%.0f', expiry), ARGV[4])
local keep = math.ceil((expiry - now) / 1000) + 1000
if redis.call('PTTL', KEYS[1]) < keep then redis.call('PEXPIRE', KEYS[1], keep) end
local gap = tonumber(ARGV[2])
if gap > 0 then
  local nxt = start + gap
  redis.call('SET', KEYS[2], string.format('%.0f', nxt), 'PX', math.ceil((nxt - now) / 1000) + 1000)
end
return {1, start - now}
"""
# KEYS[1]: the domain's holders; ARGV: holder, ttl (µs). 1 if renewed, 0 if it expired or left.
_RENEW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local expiry = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not expiry or tonumber(expiry) <= now then return 0 end
expiry = now + tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], string.format('%.0f', expiry), ARGV[1])
local keep = math.ceil((expiry - now) / 1000) + 1000
if redis.call('PTTL', KEYS[1]) < keep then redis.call('PEXPIRE', KEYS[1], keep) end
return 1
"""
_US = 1_000_000


class RedisDomainGate(RedisResource):
    """A `DomainGate` kept in Redis, shared by the workers of a job on any number of hosts.

    Per domain, the holders are the sorted set `{namespace}:gate:{domain}` (holder → expiry) and the
    next start the string `{namespace}:gate-next:{domain}`, both in integer microseconds of the Redis
    server's clock (`TIME`, read inside the script), so the workers' clocks do not matter. `enter` is
    one Lua script: drop expired holders, count, then add the holder and move the next start in the
    same atomic step; `leave` is one `ZREM`; `renew` is one more script. Both keys carry a Redis expiry a
    second past the last moment they matter, so idle domains leave nothing behind. Target a single Redis
    (or a primary with replicas); Redis Cluster is not supported.

    Failures: nothing is retried. A call that cannot reach Redis raises `mocra_core.BackendUnavailable`,
    another Redis failure `mocra_core.BackendError` (so does a call after `aclose`); an `enter` whose
    reply was lost may have taken a ticket, which then expires after its ttl. `async with` pings first.

    Args:
        url: `redis://[user:password@]host:port/db`, `rediss://…` for TLS, or `unix://path`.
        namespace: Prefix of the keys: the job's, so that jobs sharing a server have separate limits.
        client: A client of `url` to use instead of one of its own (`RedisClients`: a run's, shared by
            its stores on that server); `aclose` leaves it open.

    Raises:
        BackendError: `url` cannot be parsed.

    Example:
        >>> import anyio, uuid
        >>> async def main() -> tuple[bool, float]:
        ...     async with RedisDomainGate("redis://127.0.0.1:6379/0", namespace=uuid.uuid4().hex) as gate:
        ...         ticket = await gate.enter("example.com", limit=1, gap=0.0, ttl=30.0)
        ...         full = await gate.enter("example.com", limit=1, gap=0.0, ttl=30.0)
        ...         assert isinstance(ticket, Ticket)
        ...         await gate.leave(ticket)  # the last holder: the domain's keys are gone
        ...         return ticket.wait == 0, full
        >>> free, retry_in = anyio.run(main)
        >>> free, 29 < retry_in <= 30
        (True, True)
    """

    __slots__ = (
        "_closed",
        "_counter",
        "_enter",
        "_id",
        "_lent",
        "_prefix",
        "_redis",
        "_renew",
        "_url",
        "namespace",
    )

    def __init__(self, url: str, *, namespace: str = "mocra", client: Redis | None = None) -> None:
        if not namespace:
            raise ValueError("namespace: must not be empty")
        self._url = url
        self.namespace = namespace
        self._prefix = namespace.encode()
        self._redis = client if client is not None else connect_redis(url)
        self._lent = client is not None
        self._enter = self._redis.register_script(_ENTER)
        self._renew = self._redis.register_script(_RENEW)
        self._id = uuid.uuid4().hex[:16]
        self._counter = itertools.count(1)
        self._closed = False

    def __repr__(self) -> str:
        return f"RedisDomainGate({redact(self._url)!r}, namespace={self.namespace!r})"

    def _open(self) -> Redis:
        if self._closed:
            raise BackendError("redis", self._url, "the domain gate is closed")
        return self._redis

    def _holders_key(self, raw_domain: bytes) -> bytes:
        return self._prefix + b":gate:" + raw_domain

    async def enter(self, domain: str, *, limit: int, gap: float, ttl: float) -> Ticket | float:
        """Take a slot of `domain` and reserve a start (see `DomainGate`); one Lua script.

        Raises:
            ValueError: an argument makes no sense (nothing is sent).
            BackendError: Redis failed, cannot be reached, or the gate is closed.
        """
        raw = check_enter(domain, limit, gap, ttl)
        holder = f"{self._id}:{next(self._counter)}"
        keys = [self._holders_key(raw), self._prefix + b":gate-next:" + raw]
        args: list[int | str] = [limit, math.ceil(gap * _US), math.ceil(ttl * _US), holder]
        self._open()
        try:
            admitted, micros = await self._enter(keys, args)
        except RedisError as exc:
            raise redis_failure(self._url, exc) from exc
        if admitted:
            return Ticket(domain, holder, micros / _US)
        return float(micros / _US)

    async def leave(self, ticket: Ticket) -> None:
        """Give the slot back (`ZREM`); a ticket that expired or left already changes nothing.

        Raises:
            BackendError: Redis failed, cannot be reached, or the gate is closed.
        """
        try:
            await self._open().zrem(self._holders_key(ticket.domain.encode()), ticket.holder)
        except RedisError as exc:
            raise redis_failure(self._url, exc) from exc

    async def renew(self, ticket: Ticket, *, ttl: float) -> bool:
        """Make `ticket` expire `ttl` seconds from now (server time); False if it expired or left.

        Raises:
            ValueError: `ttl` is not a finite positive number of seconds.
            BackendError: Redis failed, cannot be reached, or the gate is closed.
        """
        raw = check_enter(ticket.domain, 1, 0.0, ttl)
        self._open()
        try:
            renewed = await self._renew([self._holders_key(raw)], [ticket.holder, math.ceil(ttl * _US)])
        except RedisError as exc:
            raise redis_failure(self._url, exc) from exc
        return bool(renewed)
