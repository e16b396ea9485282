"""`RedisCoordination`: the `Coordination` of workers on many hosts, in one Redis server."""

from __future__ import annotations

import logging
import math
import os
import socket
import time
import uuid
from typing import TYPE_CHECKING, Any, cast

import anyio
from redis.exceptions import RedisError, ResponseError

from ..._errors import BackendError, redact
from ...coordination._errors import CoordinationError
from ...coordination._protocol import (
    LockInfo,
    check_key,
    check_lock_key,
    check_ttl,
    parse_counter,
)
from ._connection import RedisResource, connect_redis, redis_failure
from ._coordination_locks import RedisLocks
from ._coordination_lua import APPEND, COMPARE_AND_SET, INCR, ITEMS, PRELUDE, SET, SET_IF_ABSENT

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from redis.asyncio import Redis
    from redis.commands.core import AsyncScript

__all__ = ("BACKSTOP_GRACE", "RedisCoordination")

logger = logging.getLogger(__name__)

BACKSTOP_GRACE = 5.0
"""Seconds after a value's logical expiry at which Redis deletes it (real clock only)."""

_LIST, _VALUE = "holds a list, not a value", "holds a value, not a list"


class RedisCoordination(RedisResource):
    """Coordination shared by the workers of a job on any number of hosts, through one Redis server.

    Every call is one Lua script or one command, so it is atomic in Redis and costs one round trip:
    ~110-125 µs for `set_if_absent` or `incr` against a Redis on the same 2-core VM, of which
    redis-py's own round trip (without hiredis) is ~85-100 µs. Keys live under `namespace`: a value
    is the hash `{namespace}:v:{key}` with fields `v` (the bytes) and `e` (its expiry, absent for
    never), a list a Redis list at the same name, a lock the hash `{namespace}:l:{name}` (`h` holder,
    `t` token, `e` expiry), and the fencing counter `{namespace}:fence` (`INCR`, so tokens increase
    across all locks and all clients). Target a single Redis (or a primary with replicas); Redis
    Cluster is not supported.

    **Expiry** is judged on this client's `clock` (epoch seconds), which every script receives as
    `now`: an entry whose `e <= now` is absent to every call, so a test can move time with a fake clock.
    Hosts must agree on the time (NTP). With the default clock (`time.time`) each value written with a
    ttl also gets a Redis `PEXPIRE` of `ttl + BACKSTOP_GRACE` (5 s) so Redis frees it even if no client
    touches it again; with any other clock there is no backstop (Redis's timer would not follow it) and
    expired values stay in Redis until overwritten or deleted. Lock grants never get one, so that a
    holder that paused past its expiry can still renew (see `Coordination`).

    **Counters** are ASCII decimals in `v`, incremented by `HINCRBY` (which keeps the expiry and checks
    the format and the 64-bit range); a `delta` beyond 64 bits takes a read and a compare-and-set.

    **Leadership.** `is_leader()` takes or renews the reserved lock `__leader__` under `holder_id` for
    `leader_ttl` seconds, as `LmdbCoordination` does: it is renewed only by calls, and skipped while
    more than half of it is left, so call it at least every `leader_ttl / 2` seconds; another worker
    takes over `leader_ttl` seconds after the leader's last call at the latest. `aclose` gives it up.

    **Failures.** Nothing is retried: a command whose reply is lost may have run, and a retried
    `set_if_absent` would tell the worker that set the key it did not. A call that cannot reach Redis
    raises `BackendUnavailable` (a `BackendError`, URL redacted), any other Redis failure
    `BackendError`; `async with` pings first, so an unreachable server fails at start. Fencing tokens
    survive a Redis restart only as far as its persistence (AOF/RDB) does.

    Args:
        url: `redis://[user:password@]host:port/db`, `rediss://…` for TLS, or `unix://path`.
        namespace: Prefix of every key, so jobs can share a server.
        clock: Judges expiry, in epoch seconds (inject a fake one in tests).
        holder_id: Who this instance is when it leads; default `"{hostname}:{pid}:{uuid4 hex}"`.
        leader_ttl: Seconds a leader lease lives without renewal.
        client: A client of `url` to use instead of one of its own (`RedisClients`: a run's, shared by
            its stores on that server); `aclose` leaves it open.

    Raises:
        BackendError: `url` cannot be parsed.

    Example:
        >>> import anyio, redis, uuid
        >>> namespace = f"example-{uuid.uuid4().hex}"
        >>> async def main():
        ...     async with RedisCoordination("redis://127.0.0.1:6379/0", namespace=namespace) as shared:
        ...         first = await shared.set_if_absent("seeded/quotes", ttl=60)
        ...         again = await shared.set_if_absent("seeded/quotes", ttl=60)
        ...         token = await shared.acquire_lock("login/alice", holder="worker-1", ttl=30)
        ...         other = await shared.acquire_lock("login/alice", holder="worker-2", ttl=30)
        ...         await shared.release_lock("login/alice", "worker-1", token)
        ...         await shared.delete("seeded/quotes")
        ...         return first, again, token, other
        >>> anyio.run(main)
        (True, False, 1, None)
        >>> redis.Redis(port=6379).delete(f"{namespace}:fence")  # the last key of the example
        1
    """

    __slots__ = (
        "_append",
        "_backstop",
        "_cas",
        "_clock",
        "_closed",
        "_incr",
        "_items",
        "_leader_ttl",
        "_lent",
        "_locks",
        "_redis",
        "_set",
        "_set_if_absent",
        "_url",
        "_values",
        "holder_id",
        "namespace",
    )

    def __init__(
        self,
        url: str,
        *,
        namespace: str = "mocra",
        clock: Callable[[], float] = time.time,
        holder_id: str | None = None,
        leader_ttl: float = 10.0,
        client: Redis | None = None,
    ) -> None:
        check_ttl(leader_ttl)
        if not namespace:
            raise ValueError("namespace must not be empty")
        self._url, self.namespace, self._clock = url, namespace, clock
        self._backstop = clock is time.time
        self._leader_ttl = leader_ttl
        self.holder_id = holder_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex}"
        self._values = f"{namespace}:v:".encode()
        self._closed, self._lent = False, client is not None
        self._redis = redis = client if client is not None else connect_redis(url)
        self._set = redis.register_script(PRELUDE + SET)
        self._set_if_absent = redis.register_script(PRELUDE + SET_IF_ABSENT)
        self._cas = redis.register_script(PRELUDE + COMPARE_AND_SET)
        self._incr = redis.register_script(PRELUDE + INCR)
        self._append = redis.register_script(PRELUDE + APPEND)
        self._items = redis.register_script(PRELUDE + ITEMS)
        self._locks = RedisLocks(redis, namespace, clock, self._eval)

    def __repr__(self) -> str:
        return f"RedisCoordination({redact(self._url)!r}, namespace={self.namespace!r})"

    # ------------------------------------------------------------------ plumbing

    def _open(self) -> Redis:
        if self._closed:
            raise CoordinationError("", f"{self!r} is closed")
        return self._redis

    async def _eval(self, script: AsyncScript, keys: Sequence[bytes], args: Sequence[object]) -> Any:
        self._open()
        try:
            return await script(keys, args)  # type: ignore[arg-type]
        except RedisError as exc:
            raise redis_failure(self._url, exc) from exc

    def _expiry(self, ttl: float | None) -> tuple[object, int]:
        """The logical expiry to store ('' = never) and the backstop in ms (0 = none)."""
        if ttl is None:
            return "", 0
        deadline = self._clock() + ttl
        return deadline, math.ceil((ttl + BACKSTOP_GRACE) * 1000) if self._backstop else 0

    # ------------------------------------------------------------------ values

    async def get(self, key: str) -> bytes | None:
        """Return the value of `key`, or None if absent or expired."""
        rk = self._values + check_key(key)
        try:
            found = await self._open().hmget(rk, ["v", "e"])
        except ResponseError as exc:
            if str(exc).startswith("WRONGTYPE"):
                raise CoordinationError(key, _LIST) from exc
            raise redis_failure(self._url, exc) from exc
        except RedisError as exc:
            raise redis_failure(self._url, exc) from exc
        value, expiry = cast("list[bytes | None]", found)
        if expiry is not None and float(expiry) <= self._clock():
            return None
        return value

    async def set(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        """Store `value` under `key`, replacing whatever was there."""
        rk = self._values + check_key(key)
        check_ttl(ttl)
        await self._eval(self._set, [rk], [value, *self._expiry(ttl)])

    async def set_if_absent(self, key: str, value: bytes = b"1", *, ttl: float | None = None) -> bool:
        """Store `value` if `key` is absent or expired; True if stored."""
        rk = self._values + check_key(key)
        check_ttl(ttl)
        return bool(await self._eval(self._set_if_absent, [rk], [self._clock(), value, *self._expiry(ttl)]))

    async def compare_and_set(
        self, key: str, expected: bytes | None, value: bytes | None, *, ttl: float | None = None
    ) -> bool:
        """Replace (or, with `value=None`, delete) the value of `key` if it equals `expected`."""
        rk = self._values + check_key(key)
        check_ttl(ttl)
        mode = "del" if value is None else "put"
        return await self._compare_and_set(key, rk, expected, mode, value or b"", ttl)

    async def _compare_and_set(
        self, key: str, rk: bytes, expected: bytes | None, mode: str, value: bytes, ttl: float | None
    ) -> bool:
        has_expected = "0" if expected is None else "1"
        args = [self._clock(), has_expected, expected or b"", mode, value, *self._expiry(ttl)]
        done = await self._eval(self._cas, [rk], args)
        if done == -1:
            raise CoordinationError(key, _LIST)
        return bool(done)

    async def delete(self, key: str) -> None:
        """Remove `key`."""
        rk = self._values + check_key(key)
        try:
            await self._open().delete(rk)
        except RedisError as exc:
            raise redis_failure(self._url, exc) from exc

    async def incr(self, key: str, delta: int = 1) -> int:
        """Add `delta` to the counter `key` (missing = 0), keeping its expiry; return the new value."""
        rk = self._values + check_key(key)
        done, *current = await self._eval(self._incr, [rk], [self._clock(), delta])
        if done == 1:
            return int(current[0])
        if done == -1:
            raise CoordinationError(key, _LIST)
        parse_counter(key, current[0] if current else None, delta)  # raises: not a counter, overflow
        while True:  # a valid sum that HINCRBY cannot take (|delta| >= 2**63): read, then compare-and-set
            value = await self.get(key)
            new = parse_counter(key, value, delta)
            if await self._compare_and_set(key, rk, value, "keep", str(new).encode(), None):
                return new

    async def append(self, key: str, value: bytes) -> int:
        """Append `value` to the list `key`; return its new length."""
        rk = self._values + check_key(key)
        length = await self._eval(self._append, [rk], [self._clock(), value])
        if length == -1:
            raise CoordinationError(key, _VALUE)
        return int(length)

    async def items(self, key: str) -> list[bytes]:
        """Return the list `key` in append order (empty if missing)."""
        rk = self._values + check_key(key)
        found = await self._eval(self._items, [rk], [self._clock()])
        if found == -1:
            raise CoordinationError(key, _VALUE)
        return list(found)

    # ------------------------------------------------------------------ locks

    async def acquire_lock(self, key: str, holder: str, ttl: float) -> int | None:
        """Take the lock if free, expired or ours; return a new fencing token, or None."""
        lk = self._locks.prefix + check_lock_key(key)
        check_ttl(ttl)
        granted = await self._locks.take(lk, holder, ttl)
        return None if granted is None else granted[0]

    async def renew_lock(self, key: str, holder: str, token: int, ttl: float) -> bool:
        """Extend the lock if its latest grant is `(holder, token)`."""
        lk = self._locks.prefix + check_lock_key(key)
        check_ttl(ttl)
        return await self._locks.extend(lk, holder, token, ttl) is not None

    async def release_lock(self, key: str, holder: str, token: int) -> bool:
        """Free the lock if its latest grant is `(holder, token)`."""
        lk = self._locks.prefix + check_lock_key(key)
        return await self._locks.release(lk, holder, token)

    async def lock_holder(self, key: str) -> LockInfo | None:
        """Return the live holder of the lock, or None."""
        lk = self._locks.prefix + check_key(key)
        try:
            found = await self._open().hmget(lk, ["h", "t", "e"])
        except RedisError as exc:
            raise redis_failure(self._url, exc) from exc
        holder, token, expiry = cast("list[bytes | None]", found)
        if holder is None or token is None or expiry is None or float(expiry) <= self._clock():
            return None
        return LockInfo(holder=holder.decode(), token=int(token), expires=float(expiry))

    # ------------------------------------------------------------------ leadership, lifecycle

    async def is_leader(self) -> bool:
        """Take or renew the leader lease; return whether this instance holds it."""
        if self._locks.holds_lease(self._leader_ttl):
            self._open()
            return True
        return await self._locks.lead(self.holder_id, self._leader_ttl)

    async def aclose(self) -> None:
        """Give up leadership and close the connections (not a lent client's); again does nothing."""
        if self._closed:
            return
        try:
            with anyio.move_on_after(5, shield=True):
                await self._locks.step_down(self.holder_id)
        except BackendError as exc:  # the lease lapses by itself after leader_ttl
            logger.warning("could not give up leadership of %r: %s", self.namespace, exc)
        finally:
            self._closed = True
            if not self._lent:
                with anyio.CancelScope(shield=True):
                    await self._redis.aclose()
