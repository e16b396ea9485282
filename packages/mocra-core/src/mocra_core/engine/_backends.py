"""Which queue, coordination store and seen set a run uses, from its settings.

One process: memory (or, with `crawl.job_dir`, LMDB files in the job dir). Several workers sharing a crawl:
the broker named by `queue.url` for the queues, and a shared coordination store (`coordination.url`, or the
queue's Redis, or the job dir's LMDB on one host) for gates, seed-once flags and — when no native set
exists — the seen set, and a `DomainGate` on the same store so per-domain politeness holds job-wide.
A cluster (`Mocra.builder().cluster(…)`, `mocra run --cluster`) replaces all of it but the queue: its
control plane is the coordination store and the seen set, and there is no job-wide gate.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import msgspec

from .._errors import ConfigError
from ..coordination import LmdbCoordination, LocalCoordination
from ..dedup import CoordinationSeenSet, MemorySeenSet
from ..download import LmdbDomainGate
from ..queue import SpillingQueue, open_queue
from ._codec import EngineCodec
from ._frontier import REQUESTS

if TYPE_CHECKING:
    from mocra_cluster import ControlPlane

    from ..config import Settings
    from ..coordination import Coordination
    from ..dedup import SeenSet
    from ..download import DomainGate
    from ..queue import QueueBackend
    from ._jobdir import JobDir

__all__ = (
    "backend_options",
    "check_backends",
    "is_shared",
    "job_name",
    "open_coordination",
    "open_gate",
    "open_queue_for",
    "open_seen",
)


def _namespace(job: str) -> str:
    """The backend namespace of a job: `mocra-<job>` with anything but letters, digits, `-`, `_` replaced."""
    return "mocra-" + re.sub(r"[^A-Za-z0-9_-]", "_", job)


def _scheme(url: str) -> str:
    return url.partition("://")[0]


def is_shared(settings: Settings) -> bool:
    """True when the queues live on a broker that other workers may share.

    Example:
        >>> from mocra_core.config import Settings
        >>> is_shared(Settings()), is_shared(Settings.from_mapping({"queue": {"url": "nats://127.0.0.1:4222"}}))
        (False, True)
    """
    return _scheme(settings.queue.url) not in ("memory", "lmdb")


def job_name(settings: Settings, modules: list[str]) -> str:
    """The job's name: `crawl.job`, else the sorted module names joined by `+`."""
    return settings.crawl.job or "+".join(sorted(modules))


def open_queue_for(settings: Settings, job: JobDir | None, name: str) -> QueueBackend:
    """The queue backend of a run with `settings` for the job `name`; not connected (use `async with`).

    A broker's queue is namespaced by the job name and gets the `[queue.*]` options of its scheme, so any
    process that opens it with the same settings and name reaches the queues of the job's workers (as
    `mocra dlq --queue URL --job NAME` does).

    Example:
        >>> from mocra_core.config import Settings
        >>> redis = Settings.from_mapping({"queue": {"url": "redis://127.0.0.1:6379/0"}})
        >>> open_queue_for(redis, None, "books")
        <RedisStreamsQueue 'redis://127.0.0.1:6379/0' namespace='mocra-books'>
        >>> open_queue_for(Settings(), None, "books")
        <SpillingQueue threshold=100000 spilled=0>
    """
    queue = settings.queue
    if is_shared(settings):
        return open_queue(
            queue.url,
            codec=EngineCodec(),
            namespace=_namespace(name),
            visibility_timeout=queue.visibility_timeout,
            max_attempts=queue.max_attempts,
            options=backend_options(settings),
        )
    if job is not None:
        return job.open_queue(queue)
    if queue.url != "memory://":
        return open_queue(queue.url, codec=EngineCodec(), max_attempts=queue.max_attempts,
                          visibility_timeout=queue.visibility_timeout)  # fmt: skip
    return SpillingQueue(
        codec=EngineCodec(),
        topics={REQUESTS},
        threshold=queue.spill_threshold,
        visibility_timeout=queue.visibility_timeout,
        max_attempts=queue.max_attempts,
    )


def backend_options(settings: Settings) -> dict[str, object]:
    """The `[queue.redis]`, `[queue.nats]` or `[queue.kafka]` settings of the run's queue URL, as keywords.

    Redis and NATS also get `queue.liveness_timeout` (Kafka's counterpart is its session timeout).

    Example:
        >>> from mocra_core.config import Settings
        >>> backend_options(Settings.from_mapping({"queue": {"url": "kafka://127.0.0.1:9092"}}))["partitions"]
        4
        >>> backend_options(Settings())
        {}
    """
    scheme = _scheme(settings.queue.url)
    if scheme not in ("redis", "rediss", "nats", "kafka"):
        return {}
    section = "redis" if scheme == "rediss" else scheme  # the `[queue.<section>]` of the scheme
    options: dict[str, object] = msgspec.structs.asdict(getattr(settings.queue, section))
    if section != "kafka":
        options["liveness_timeout"] = settings.queue.liveness_timeout
    return options


def check_backends(settings: Settings, *, cluster: bool = False) -> None:
    """Fail before connecting to anything when the queue and coordination settings cannot work together.

    Raises:
        ConfigError: a shared NATS or Kafka queue without a shared coordination store, or a cluster
            without a shared queue.
    """
    if cluster and not is_shared(settings):
        raise ConfigError(
            "queue.url",
            f"the nodes of a cluster share a crawl through a broker, got {settings.queue.url!r}: "
            "set queue.url=nats://… (or redis://…, kafka://…; `mocra run --queue URL`)",
            source="settings",  # a clash of settings, from wherever each came
        )
    shared_store = cluster or settings.coordination.url is not None or settings.crawl.job_dir is not None
    scheme = _scheme(settings.queue.url)
    if is_shared(settings) and scheme not in ("redis", "rediss") and not shared_store:
        raise ConfigError(
            "coordination.url",
            f"workers sharing a {scheme} queue need a shared coordination store: "
            "set coordination.url=redis://… (any host) or crawl.job_dir=DIR (workers on one host)",
            source="settings",
        )


def open_coordination(
    settings: Settings, job: JobDir | None, name: str, *, plane: ControlPlane | None = None
) -> Coordination:
    """The coordination store of a run: the cluster's `plane` if given, else see the module docstring."""
    check_backends(settings, cluster=plane is not None)
    if plane is not None:
        from ..coordination import ClusterCoordination

        return ClusterCoordination(plane, namespace=_namespace(name))
    url = settings.coordination.url
    if url is None:
        if job is not None:
            return job.open_coordination()
        if not is_shared(settings):
            return LocalCoordination()
        url = settings.queue.url  # a Redis queue: `check_backends` ruled out the others
    scheme = _scheme(url)
    if scheme == "memory":
        return LocalCoordination()
    if scheme == "lmdb":
        return LmdbCoordination(url.partition("://")[2])
    if scheme in ("redis", "rediss"):
        from ..coordination import RedisCoordination

        return RedisCoordination(url, namespace=_namespace(name))
    raise ConfigError("coordination.url", f"unknown scheme {scheme!r}; expected memory, lmdb or redis")


def open_seen(
    settings: Settings,
    job: JobDir | None,
    coordination: Coordination,
    name: str,
    *,
    plane: ControlPlane | None = None,
) -> SeenSet:
    """The seen set of a run: shared by the workers of a job when the queue is (on the cluster's `plane`)."""
    if plane is not None and is_shared(settings):
        from ..dedup import ClusterSeenSet

        return ClusterSeenSet(plane, key=f"{_namespace(name)}/seen")
    if is_shared(settings):
        redis_url = settings.coordination.url or settings.queue.url
        if _scheme(redis_url) in ("redis", "rediss"):
            from ..dedup import RedisSeenSet

            return RedisSeenSet(redis_url, namespace=_namespace(name))
        return CoordinationSeenSet(coordination)
    if job is not None:
        return job.open_seen()
    return MemorySeenSet()


def open_gate(
    settings: Settings, job: JobDir | None, name: str, *, cluster: bool = False
) -> DomainGate | None:
    """The job-wide politeness gate of a run, on the coordination store's backend; None for one process.

    Workers of a shared queue get `RedisDomainGate` when the coordination store is Redis and
    `LmdbDomainGate` (directory `gates` in the job dir, or `<coordination dir>-gates`) when it is LMDB.
    One process needs none (its `DomainLimiter` is the whole job), nor does a `memory://` coordination
    store, under which each worker keeps its own limits, nor a cluster without `coordination.url` (each
    node takes its share of the limits; with `coordination.url` set, that store's gate holds them exactly).
    """
    if not is_shared(settings) or (cluster and settings.coordination.url is None):
        return None
    url = settings.coordination.url
    if url is None:
        if job is not None:
            return LmdbDomainGate(job.path / "gates")
        url = settings.queue.url  # a Redis queue: `check_backends` ruled out the others
    scheme = _scheme(url)
    if scheme == "lmdb":
        return LmdbDomainGate(url.partition("://")[2].rstrip("/") + "-gates")
    if scheme in ("redis", "rediss"):
        from ..download import RedisDomainGate

        return RedisDomainGate(url, namespace=_namespace(name))
    return None
