"""The backends of a decided `BackendPlan`, made (not connected): queue, coordination store, seen set, gate.

Each maker follows what the plan says and decides nothing; `BackendPlan.make_queue` and its siblings call
these, and `open_backends` (in `_backends.py`) connects what they make.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from .._errors import ConfigError

if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager

    from mocra_cluster import ControlPlane

    from ..backends.redis._clients import RedisClients
    from ..config import QueueSettings, Settings
    from ..coordination import Coordination
    from ..dedup import SeenSet
    from ..download import DomainGate
    from ..queue import QueueBackend
    from ._plan import BackendPlan, QueueView

__all__ = ("backend_options", "make_coordination", "make_gate", "make_queue", "make_seen", "read_queue")

_BROKER_SECTIONS = {"redis": "redis", "rediss": "redis", "nats": "nats", "kafka": "kafka"}


def make_queue(plan: BackendPlan) -> QueueBackend:
    """The queue backend of `plan`, not connected (see `BackendPlan.make_queue`)."""
    from ..queue import LmdbQueue, SpillingQueue, open_queue
    from ..topics import REQUESTS
    from ._codec import EngineCodec

    settings, queue = plan.queue_settings, plan.queue
    if plan.shared:
        return open_queue(
            queue.where,
            codec=EngineCodec(),
            namespace=plan.namespace,
            visibility_timeout=settings.visibility_timeout,
            max_attempts=settings.max_attempts,
            options=_options(settings),
        )
    if queue.kind == "lmdb":
        return LmdbQueue(
            queue.where,
            codec=EngineCodec(),
            visibility_timeout=settings.visibility_timeout,
            max_attempts=settings.max_attempts,
        )
    return SpillingQueue(
        codec=EngineCodec(),
        topics={REQUESTS},
        threshold=settings.spill_threshold,
        visibility_timeout=settings.visibility_timeout,
        max_attempts=settings.max_attempts,
    )


def read_queue(plan: BackendPlan) -> AbstractAsyncContextManager[QueueView]:
    """The queues of `plan` to read (see `BackendPlan.read_queue`)."""
    if plan.queue.kind == "lmdb":
        from ..backends.lmdb._queue_reader import LmdbQueueReader
        from ._codec import EngineCodec

        return LmdbQueueReader(plan.queue.where, codec=EngineCodec())
    return plan.make_queue()


def make_coordination(
    plan: BackendPlan, plane: ControlPlane | None = None, redis: RedisClients | None = None
) -> Coordination:
    """The coordination store of `plan`, not connected (see `BackendPlan.make_coordination`).

    Raises:
        ConfigError: the plan names none.
    """
    from ..coordination import LmdbCoordination, LocalCoordination

    store = plan.coordination
    if store is None:
        raise ConfigError(
            "coordination.url", f"job {plan.job!r} on {plan.queue} names no shared coordination store"
        )
    if store.kind == "cluster":
        from ..coordination import ClusterCoordination

        assert plane is not None, "a cluster's coordination store is its started plane"
        return ClusterCoordination(plane, namespace=plan.namespace)
    if store.kind == "lmdb":
        return LmdbCoordination(store.where)
    if store.kind == "redis":
        from ..coordination import RedisCoordination

        client = None if redis is None else redis.get(store.where)
        return RedisCoordination(store.where, namespace=plan.namespace, client=client)
    return LocalCoordination()


def make_seen(
    plan: BackendPlan,
    coordination: Coordination,
    plane: ControlPlane | None = None,
    redis: RedisClients | None = None,
) -> SeenSet | None:
    """The seen set of `plan`, not opened; None without dedup (see `BackendPlan.make_seen`)."""
    from ..dedup import CoordinationSeenSet, LmdbSeenSet, MemorySeenSet

    seen = plan.seen
    if seen is None:
        return None
    if seen.kind == "cluster":
        from ..dedup import ClusterSeenSet

        assert plane is not None, "a cluster's seen set is on its started plane"
        return ClusterSeenSet(plane, key=f"{plan.namespace}/seen")
    approximate, capacity, rate = plan.dedup.approximate, plan.dedup.capacity, plan.dedup.false_positive_rate
    if seen.kind == "redis":
        from ..dedup import RedisBloomSeenSet, RedisSeenSet

        client = None if redis is None else redis.get(seen.where)
        if approximate:
            return RedisBloomSeenSet(
                seen.where,
                namespace=plan.namespace,
                capacity=capacity,
                false_positive_rate=rate,
                client=client,
            )
        return RedisSeenSet(seen.where, namespace=plan.namespace, client=client)
    if seen.kind == "coordination":
        return CoordinationSeenSet(coordination)
    if seen.kind == "lmdb":
        return LmdbSeenSet(seen.where)
    if approximate:
        from ..dedup import MemoryBloomSeenSet

        return MemoryBloomSeenSet(capacity=capacity, false_positive_rate=rate)
    return MemorySeenSet()


def make_gate(plan: BackendPlan, redis: RedisClients | None = None) -> DomainGate | None:
    """The job-wide politeness gate of `plan`, not opened; None for one process (`BackendPlan.make_gate`)."""
    gate = plan.gate
    if gate is None:
        return None
    if gate.kind == "lmdb":
        from ..download import LmdbDomainGate

        return LmdbDomainGate(gate.where)
    from ..download import RedisDomainGate

    client = None if redis is None else redis.get(gate.where)
    return RedisDomainGate(gate.where, namespace=plan.namespace, client=client)


def _options(settings: QueueSettings) -> dict[str, object]:
    section = _BROKER_SECTIONS.get(settings.url.partition("://")[0])  # the `[queue.<section>]` of the scheme
    if section is None:
        return {}
    options: dict[str, object] = msgspec.structs.asdict(getattr(settings, section))
    if section != "kafka":
        options["liveness_timeout"] = settings.liveness_timeout
    return options


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
    return _options(settings.queue)
