"""The one place a Redis client is built (`connect_redis`), and the connection life of the stores on it.

Every Redis-backed object (the stream queue, the coordination store, the seen set, the politeness gate)
gets its client from `connect_redis`; what differs between them is whether a command is retried on a
stale pooled connection (the queue's scripts are; the others' are not idempotent, so never), and the
queue's RESP2 and connect timeout.
`RedisResource` is the connection life of the coordination store, seen set and gate: a client of their
own, closed with them, or one a run shares between them (`RedisClients`), closed by the run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from ..._errors import BackendError, BackendUnavailable, ConfigError, redact

if TYPE_CHECKING:
    from types import TracebackType
    from typing import Self

__all__ = ("RedisResource", "connect_redis", "ping_redis", "redis_failure")


def connect_redis(
    url: str,
    *,
    retries: int = 0,
    connect_timeout: float | None = None,
    protocol: int | None = None,
    setting: str | None = None,
) -> Redis:
    """A client for `url` (bytes replies); it connects on first use.

    Args:
        url: `redis://[user:password@]host:port/db`, `rediss://…` for TLS, or `unix://path`.
        retries: Times a command is sent again on a fresh connection when its connection fails. 0 for
            commands whose reply may be lost after they ran and that are not idempotent (a retried
            `set_if_absent` would answer False to the worker that set the key).
        connect_timeout: Seconds to wait for a connection (None: the OS's).
        protocol: 2 for RESP2, 3 for RESP3, None for redis-py's default; the URL's `?protocol=` wins.
        setting: The setting `url` came from: a bad URL raises `ConfigError` naming it (else
            `BackendError`).

    Raises:
        ConfigError: `url` cannot be parsed (with `setting`).
        BackendError: `url` cannot be parsed (without `setting`).

    Example:
        >>> connect_redis("redis://127.0.0.1:6379/2").connection_pool.connection_kwargs["db"]
        2
        >>> try:
        ...     connect_redis("redis://:secret@127.0.0.1:port/0", setting="queue.url")
        ... except ConfigError as exc:
        ...     print(exc)
        <code>: queue.url: 'redis://:***@127.0.0.1:port/0': Port could not be cast to integer value as 'port'
    """
    try:
        return Redis.from_url(
            url, protocol=protocol, retry=Retry(NoBackoff(), retries), socket_connect_timeout=connect_timeout
        )
    except ValueError as exc:
        if setting is not None:
            raise ConfigError(setting, f"{redact(url)!r}: {exc}") from None
        raise BackendError("redis", url, f"bad URL: {exc}") from exc


def redis_failure(url: str, exc: RedisError) -> BackendError:
    """The mocra error for a redis-py error: `BackendUnavailable` when Redis cannot be reached."""
    problem = str(exc) or type(exc).__name__
    if isinstance(exc, (RedisConnectionError, RedisTimeoutError)):
        return BackendUnavailable("redis", url, problem)
    return BackendError("redis", url, problem)


async def ping_redis(client: Redis, url: str) -> None:
    """Check that Redis answers; raise `BackendUnavailable` naming the (redacted) URL if not."""
    try:
        await client.ping()
    except RedisError as exc:
        raise redis_failure(url, exc) from exc


class RedisResource:
    """The connection life of a Redis-backed object (coordination, seen set, politeness gate).

    `async with` checks that Redis answers (else closes and raises `BackendUnavailable` naming the URL);
    `aclose` closes the connections once, unless the client was lent (`_lent`: a run's shared client,
    which the run closes). Subclasses set `_redis`, `_url`, `_closed` and `_lent`, and may override
    `_open` to raise their own error for a call on a closed object.
    """

    _redis: Redis
    _url: str
    _closed: bool
    _lent: bool

    def _open(self) -> Redis:
        if self._closed:
            raise BackendError("redis", self._url, "closed")
        return self._redis

    async def aclose(self) -> None:
        """Close the connections (not those of a lent client); calling it again does nothing."""
        if self._closed:
            return
        self._closed = True
        if not self._lent:
            with anyio.CancelScope(shield=True):
                await self._redis.aclose()

    async def __aenter__(self) -> Self:
        try:
            await ping_redis(self._open(), self._url)
        except BaseException:
            await self.aclose()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
