"""`RedisStore`: the Redis side of `RedisStreamsQueue`: the connection pool, typed script calls, retries."""

from __future__ import annotations

import logging
import math
import os
import secrets
import socket
from functools import partial
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar, cast

import anyio
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, RedisError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from ..._errors import BackendError, BackendUnavailable, redact
from ..._gather import Gather
from ._connection import connect_redis
from ._queue_lua import ACK, BEAT, END, FORGET, PENDING, PUBLISH, REPLAY
from ._queue_lua_take import TAKE

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from redis.commands.core import AsyncScript

__all__ = ("Entry", "Publish", "RedisStore", "Taken")

logger = logging.getLogger(__name__)

T = TypeVar("T")

SCAN_LIMIT = 1000  # stream entries one take reads (or delayed messages it moves) at most
_RETRYABLE = (RedisConnectionError, RedisTimeoutError, OSError)

StreamEntries = list[tuple[bytes, dict[bytes, bytes]]]
Call = tuple["AsyncScript", "list[Any]"]  # a script and its arguments (it computes its keys)

Publish = tuple[str, int, "str | None", "Sequence[bytes]"]
"""One publish: lane, delay (ms, 0 for none), partition key, envelopes."""


class Entry(NamedTuple):
    """A stream entry a take leased."""

    lease: bytes  # the lease token that ack, nack and dead-letter pass back (see `_queue_lua.py`)
    lane: bytes
    id: bytes
    deliveries: int  # 1 the first time, + 1 each time a lease expired
    key: bytes | None  # its `k` field: the partition key
    envelope: bytes | None  # its `e` field, or None (the entry's fields packed by cmsgpack)
    fields: bytes  # the entry's fields in cmsgpack, when it has no `e`


def _entry(record: bytes) -> Entry:
    lane, count, has_key = record[:16], int(record[16:24], 16), record[24:25] == b"k"
    end_of_id = 35 + int(record[25:27], 16)
    end = end_of_id + int(record[27:35], 16)
    body = record[end + 1 :]
    is_envelope = record[end : end + 1] == b"e"
    return Entry(
        record[:end],
        lane,
        record[35:end_of_id],
        count,
        record[end_of_id:end] if has_key else None,
        body if is_envelope else None,
        b"" if is_envelope else body,
    )


class Taken(NamedTuple):
    """What a take found, and (when it found nothing) what a waiting consumer needs to know."""

    entries: list[Entry]
    again: bool  # it stopped at the scan limit: take again at once
    more: bool  # the XAUTOCLAIM sweep did not finish: sweep again on the next take
    due: float | None  # seconds until the first delayed message is due
    busy: bool  # something is leased (a lease may expire)
    bell: bytes  # the bell's last entry id: listen for rings after it


class RedisStore:
    """One Redis connection pool and the scripts of `_queue_lua.py`, with retries on connection errors.

    Script calls made while another is on the wire go together in the next pipeline (one round trip,
    one socket write), whatever their script: a worker's takes, acks and publishes of several topics
    share round trips.

    Every call retries connection errors (and a server still loading its data) with backoff for up to
    `reconnect_timeout` seconds, then raises `BackendUnavailable`; other server errors raise
    `BackendError`. After `close`, calls raise `anyio.ClosedResourceError`.
    """

    def __init__(self, url: str, *, connect_timeout: float, reconnect_timeout: float) -> None:
        self.url = redact(url)
        self.closed = False
        self.consumer = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self._connect_timeout = connect_timeout
        self._reconnect_timeout = reconnect_timeout
        self._redis = connect_redis(  # one retry: a stale pooled connection; `_run` retries the rest
            url, retries=1, connect_timeout=connect_timeout, protocol=2, setting="queue.url"
        )
        register = self._redis.register_script
        self._publish, self._take, self._ack = register(PUBLISH), register(TAKE), register(ACK)
        self._end, self._replay, self._pending = register(END), register(REPLAY), register(PENDING)
        self._forget, self._beat = register(FORGET), register(BEAT)
        self._calls: Gather[Call, object] = Gather(self._pipeline)

    async def connect(self) -> None:
        """Check that the server answers and is recent enough.

        Raises:
            BackendUnavailable: it does not answer within `connect_timeout` seconds.
            BackendError: it is older than Redis 6.2.
        """
        try:
            with anyio.fail_after(self._connect_timeout + 1):
                await self._redis.ping()
                info = await self._redis.info("server")
        except ResponseError:  # INFO not allowed (ACL): assume a recent server
            info = {}
        except (RedisError, OSError, TimeoutError) as exc:
            problem = str(exc) or f"no answer in {self._connect_timeout + 1:g} s"
            raise BackendUnavailable("redis", self.url, f"cannot connect: {problem}") from exc
        version = tuple(int(x) for x in str(info.get("redis_version", "6.2")).split(".")[:2])
        if version < (6, 2):
            raise BackendError("redis", self.url, f"needs Redis 6.2 or later (XAUTOCLAIM), found {version}")

    async def close(self, groups: Sequence[tuple[str, str]] = ()) -> None:
        """Close every connection, including those of blocked calls.

        First (best effort, one second at most) drop this consumer from the consumer groups of the
        (topic prefix, group) pairs in `groups` if it holds no lease there, and any consumer idle for a
        day without leases.
        """
        self.closed = True
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(1.0):
                for prefix, group in groups:
                    try:
                        await self._forget(args=[prefix, group, self.consumer, 86_400_000])
                    except (RedisError, OSError) as exc:
                        logger.debug("could not drop consumer %s: %s", self.consumer, exc)
                        break
            await self._redis.aclose()

    async def _run(self, call: Callable[[], Awaitable[T]]) -> T:
        """Await `call()`, retrying connection errors for up to `reconnect_timeout` seconds."""
        failing_since: float | None = None
        pause = 0.05
        while True:
            if self.closed:
                raise anyio.ClosedResourceError
            try:
                result = await call()
            except _RETRYABLE as exc:
                now = anyio.current_time()
                if failing_since is None:
                    failing_since = now
                    logger.warning("redis at %s unreachable, retrying: %s", self.url, exc)
                elif now - failing_since >= self._reconnect_timeout:
                    problem = f"unreachable for {self._reconnect_timeout:g} s: {exc}"
                    raise BackendUnavailable("redis", self.url, problem) from exc
                await anyio.sleep(pause)
                pause = min(pause * 2, 1.0)
                continue
            except RedisError as exc:
                raise BackendError("redis", self.url, str(exc)) from exc
            if failing_since is not None:
                logger.info("redis at %s reachable again", self.url)
            return result

    async def _script(self, script: AsyncScript, args: list[Any]) -> Any:
        result = await self._run(partial(self._calls, (script, args)))
        if isinstance(result, RedisError):
            raise BackendError("redis", self.url, str(result)) from result
        return result

    async def _pipeline(self, calls: list[Call]) -> list[object]:
        """Run script calls in one pipeline; a call's server error is its result (loads missing scripts)."""
        results: list[object] = [None] * len(calls)
        todo = list(range(len(calls)))
        for _ in range(2):  # the second time after (re)loading scripts the server did not know
            pipe = self._redis.pipeline(transaction=False)
            for i in todo:
                script, args = calls[i]
                pipe.evalsha(script.sha, 0, *args)
            replies = await pipe.execute(raise_on_error=False)
            missing: dict[str, AsyncScript] = {}
            for i, reply in zip(todo, replies, strict=True):
                results[i] = reply
                if isinstance(reply, NoScriptError):
                    missing[calls[i][0].sha] = calls[i][0]
            if not missing:
                break
            for script in missing.values():
                script.sha = await self._redis.script_load(script.script)
            todo = [i for i in todo if isinstance(results[i], NoScriptError)]
        return results

    async def publish(self, prefix: str, batches: Sequence[Publish]) -> None:
        """Append each batch of envelopes to its lane (or the delayed set), all in one script."""
        args: list[Any] = [prefix]
        for lane, delay_ms, key, envelopes in batches:
            args += [lane, delay_ms, *_key(key), len(envelopes), *envelopes]
        await self._script(self._publish, args)

    async def take(
        self, prefix: str, group: str, n: int, *, sweep: bool, visibility_ms: int, liveness_ms: int
    ) -> Taken:
        """Lease up to `n` entries, highest lane first.

        The take marks this consumer alive for `liveness_ms`; with `sweep` it first claims the leases of
        consumers whose liveness lapsed, then those idle for `visibility_ms` (XAUTOCLAIM).
        """
        args = [prefix, group, self.consumer, n, int(sweep), visibility_ms, SCAN_LIMIT, liveness_ms]
        records, again, more, due, busy, bell = await self._script(self._take, args)
        entries = list(map(_entry, records))
        return Taken(entries, bool(again), bool(more), None if due < 0 else due / 1000, bool(busy), bell)

    async def beat(self, prefixes: Sequence[str], liveness_ms: int) -> None:
        """Mark this consumer alive for `liveness_ms` more in the topics of `prefixes` (one script)."""
        if prefixes:
            await self._script(self._beat, [self.consumer, liveness_ms, *prefixes])

    async def ack(self, prefix: str, group: str, leases: Sequence[bytes]) -> None:
        """End leases that are still current: their entries are gone, their keys released."""
        await self._script(self._ack, [prefix, group, self.consumer, *leases])

    async def end(
        self, prefix: str, group: str, lease: bytes, mode: str, delay_ms: int, envelope: bytes
    ) -> None:
        """End a lease if still current: `envelope` goes to its lane (`now`), `later` or the DLQ (`dead`)."""
        await self._script(self._end, [prefix, group, self.consumer, lease, mode, delay_ms, envelope])

    async def replay(self, prefix: str, items: Sequence[tuple[bytes, str, str | None, bytes]]) -> int:
        """Move DLQ entries (entry id, lane, key, fresh envelope) back to their lanes; how many moved."""
        args: list[Any] = [prefix]
        for entry, lane, key, envelope in items:
            args += [entry, lane, *_key(key), envelope]
        return int(await self._script(self._replay, args))

    async def pending(self, prefix: str) -> int:
        """Messages of a topic in its lanes, delayed set and holding lists."""
        return int(await self._script(self._pending, [prefix]))

    async def dead_letters(self, prefix: str, start: str, count: int) -> StreamEntries:
        """Up to `count` DLQ entries from `start` (an entry id, `(`id for after it, or `-`)."""
        xrange = partial(self._redis.xrange, prefix + "dlq", min=start, count=count)
        return cast("StreamEntries", await self._run(xrange))

    async def listen(self, prefix: str, snapshot: bytes, seconds: float) -> int:
        """Block up to `seconds` on the bell after `snapshot`; messages rung, or -1 (none, or an outage)."""
        try:
            reply: Any = await self._redis.xread(
                {prefix + "bell": snapshot}, block=max(1, math.ceil(seconds * 1000))
            )
        except _RETRYABLE:
            if not self.closed:
                await anyio.sleep(min(seconds, 0.25))  # the next take retries, and reports an outage
            return -1
        except RedisError as exc:
            raise BackendError("redis", self.url, str(exc)) from exc
        if not reply:
            return -1
        # RESP2: [[name, entries]]; RESP3 (if the URL asks for it): {name: [entries]}
        streams = [e for v in reply.values() for e in v] if isinstance(reply, dict) else [s[1] for s in reply]
        return sum(int(fields.get(b"n", 0)) for entries in streams for _, fields in entries)


def _key(key: str | bytes | None) -> tuple[str, str | bytes]:
    return ("0", "") if key is None else ("1", key)
