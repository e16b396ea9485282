"""`open_queue`: a `QueueBackend` from a URL such as `memory://` or `lmdb:///var/crawl/job/queue`."""

from __future__ import annotations

import importlib
import inspect
import time
from typing import TYPE_CHECKING

from .._errors import ConfigError, MissingExtra, redact

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    from ._backend import QueueBackend
    from ._codec import Codec

__all__ = ("open_queue",)


# scheme -> backend class; `_LAZY` in `queue/__init__.py` says where it lives and what extra it needs
_NETWORKED = {
    "redis": "RedisStreamsQueue",
    "rediss": "RedisStreamsQueue",
    "nats": "NatsJetStreamQueue",
    "kafka": "KafkaQueue",
}


def open_queue(
    url: str,
    *,
    codec: Codec | None = None,
    namespace: str = "mocra",
    visibility_timeout: float = 300.0,
    max_attempts: int = 5,
    clock: Callable[[], float] = time.monotonic,
    wall_clock: Callable[[], float] = time.time,
    options: Mapping[str, Any] | None = None,
) -> QueueBackend:
    """Open the queue backend a URL names; use the result with `async with`.

    - `memory://` — a new `MemoryQueue` (each call is a separate queue).
    - `lmdb:///abs/dir` or `lmdb://rel/dir` — an `LmdbQueue` in that directory; needs `codec`.
    - `redis://host:port/db` or `rediss://...` — a `RedisStreamsQueue` (the `redis` extra); needs `codec`.
    - `nats://host:port` (several: comma-separated) — a `NatsJetStreamQueue` (`nats` extra); needs `codec`.
    - `kafka://host:port` (several: comma-separated) — a `KafkaQueue` (the `kafka` extra); needs `codec`.

    Args:
        url: The backend URL (the `queue.url` setting).
        codec: How a durable or remote backend stores payloads; ignored by `memory://`.
        namespace: Prefix of everything a networked backend creates on its server.
        visibility_timeout: Seconds a delivery may stay unacked before it comes back.
        max_attempts: Deliveries of one message before it is dead-lettered.
        clock: Monotonic seconds for delays and leases (in-process backends; servers keep their own).
        wall_clock: Epoch seconds for `created` and `failed_at` (in-process backends).
        options: Keyword arguments of the networked backend's class, e.g. `{"partitions": 8}` for
            `KafkaQueue` (the `[queue.kafka]` settings); ignored by `memory://` and `lmdb://`.

    Raises:
        ConfigError: the scheme is unknown or its backend not available, the path is missing or in use,
            or a codec is needed and none was given, or `options` has one the backend does not take.
        MissingExtra: the backend's driver is not installed.

    Example:
        >>> open_queue("memory://")
        <MemoryQueue topics=0>
        >>> from mocra_core import ConfigError
        >>> try:
        ...     open_queue("amqp://broker:5672")
        ... except ConfigError as exc:
        ...     print(exc)
        <code>: queue.url: unknown scheme 'amqp'; expected memory, lmdb, redis, nats or kafka
    """
    scheme, sep, rest = url.partition("://")
    if scheme == "memory" and sep:
        from ..backends.memory._queue import MemoryQueue

        return MemoryQueue(
            visibility_timeout=visibility_timeout,
            max_attempts=max_attempts,
            clock=clock,
            wall_clock=wall_clock,
        )
    if scheme == "lmdb" and sep:
        if not rest:
            raise ConfigError("queue.url", "lmdb:// needs a directory, e.g. lmdb:///var/crawl/queue")
        if codec is None:
            raise ConfigError("queue.url", "an lmdb:// queue needs a codec for its payloads (codec=...)")
        from ..backends.lmdb._queue import LmdbQueue

        return LmdbQueue(
            rest,
            codec=codec,
            visibility_timeout=visibility_timeout,
            max_attempts=max_attempts,
            clock=clock,
            wall_clock=wall_clock,
        )
    if scheme in _NETWORKED and sep:
        if codec is None:
            raise ConfigError("queue.url", f"a {scheme}:// queue needs a codec for its payloads (codec=...)")
        from . import _LAZY  # (module, extra, driver) of each networked backend

        name = _NETWORKED[scheme]
        module, extra, driver = _LAZY[name]
        try:
            backend: Callable[..., QueueBackend] = getattr(importlib.import_module(module, __package__), name)
        except ModuleNotFoundError as exc:
            if (exc.name or "").partition(".")[0] != driver:
                raise
            raise MissingExtra(extra, f"queue URL {redact(url)!r}") from exc
        if options and (unknown := sorted(set(options) - inspect.signature(backend).parameters.keys())):
            section = "redis" if scheme == "rediss" else scheme
            raise ConfigError(f"queue.{section}", f"{name} takes no option {', '.join(unknown)}")
        return backend(
            url,
            codec=codec,
            namespace=namespace,
            visibility_timeout=visibility_timeout,
            max_attempts=max_attempts,
            **(options or {}),
        )
    raise ConfigError("queue.url", f"unknown scheme {scheme!r}; expected memory, lmdb, redis, nats or kafka")
