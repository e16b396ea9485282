"""`BackendPlan`: which queue, seen set, coordination store, politeness gate, job dir and cluster a run uses.

Decided once, from the settings (and a cluster's config), as a value that the engine opens
(`open_backends`) and the commands looking into a job (`mocra status`, `mocra dlq`) read:

- One process: memory (or, with `crawl.job_dir`, LMDB files in the job dir; or `queue.url = lmdb://DIR`).
- Several workers sharing a crawl: the broker named by `queue.url` for the queues, and a shared
  coordination store (`coordination.url`, or the queue's Redis, or the job dir's LMDB on one host) for
  seed-once flags, budget and counts, and — when no native set exists — the seen set, and a `DomainGate`
  on the same store so per-domain politeness holds job-wide.
- A cluster (`Mocra.builder().cluster(…)`, `mocra run --cluster`) replaces all of it but the queue: its
  control plane is the coordination store and the seen set, and there is no job-wide gate (unless
  `coordination.url` names one).

The plan is a value; `_backend_makers.py` builds the backends it names (`BackendPlan.make_queue` and kin).
"""

from __future__ import annotations

import dataclasses
import pathlib
import re
from typing import TYPE_CHECKING, Literal, Protocol

from .._errors import ConfigError, redact
from ..config import DedupSettings, QueueSettings
from . import _backend_makers

if TYPE_CHECKING:
    from collections.abc import Sequence
    from contextlib import AbstractAsyncContextManager

    from mocra_cluster import ClusterConfig, ControlPlane

    from ..backends.redis._clients import RedisClients
    from ..config import Settings
    from ..coordination import Coordination
    from ..dedup import SeenSet
    from ..download import DomainGate
    from ..queue import DeadLetter, QueueBackend

__all__ = ("Backend", "BackendPlan", "QueueView", "job_name")

Kind = Literal["memory", "lmdb", "redis", "nats", "kafka", "cluster", "coordination"]
_REDIS = ("redis", "rediss")


def _scheme(url: str) -> str:
    return url.partition("://")[0]


def _kind(scheme: str) -> Kind:
    """The backend kind of a broker scheme (`rediss` is Redis over TLS)."""
    kinds: dict[str, Kind] = {"redis": "redis", "rediss": "redis", "nats": "nats", "kafka": "kafka"}
    return kinds[scheme]


def job_name(settings: Settings, modules: list[str]) -> str:
    """The job's name: `crawl.job`, else the sorted module names joined by `+`.

    Example:
        >>> from mocra_core.config import Settings
        >>> job_name(Settings(), ["quotes", "books"])
        'books+quotes'
    """
    return settings.crawl.job or "+".join(sorted(modules))


class QueueView(Protocol):
    """What reading a job's queues needs: their dead letters and pending counts (`BackendPlan.read_queue`)."""

    async def dead_letters(self, topic: str, *, limit: int = 100) -> Sequence[DeadLetter]:
        """Up to `limit` dead letters of `topic`, oldest first."""
        ...

    async def pending(self, topic: str) -> int:
        """Messages of `topic` ready, delayed or leased."""
        ...


@dataclasses.dataclass(frozen=True)
class Backend:
    """One backend of a plan: its kind, and where it is (a URL or a directory; empty in memory).

    Example:
        >>> str(Backend("redis", "redis://:pw@127.0.0.1:6379/0")), str(Backend("lmdb", "/job/seen"))
        ('redis://:***@127.0.0.1:6379/0', 'lmdb /job/seen')
    """

    kind: Kind
    where: str = ""

    def __str__(self) -> str:
        if self.kind == "coordination":
            return "in the coordination store"
        if "://" in self.where:
            return redact(self.where)
        return f"{self.kind} {self.where}" if self.where else self.kind


@dataclasses.dataclass(frozen=True, kw_only=True)
class BackendPlan:
    """The backends of a run, decided once from its settings (`decide`), opened by `open_backends`.

    Attributes:
        job: The job's name (it namespaces everything a shared backend holds of the job).
        shared: Whether the queues live on a broker other workers may share.
        queue: The stage queues: `memory` (spilling to disk past `queue.spill_threshold`), `lmdb` (a
            directory), or a broker (`redis`, `nats`, `kafka`).
        coordination: The coordination store: `memory`, `lmdb`, `redis` or `cluster`; None only in a
            `read_only` plan of a shared job that names none (its counts are out of reach).
        seen: The seen set (`memory`, `lmdb`, `redis`, `cluster`, or `coordination`: in the coordination
            store); None with `crawl.dedup = false`. With `dedup.approximate`, a `memory` or `redis` set
            is a scalable Bloom filter (`MemoryBloomSeenSet`, `RedisBloomSeenSet`), and a cluster node
            whose queue (or `coordination.url`) is on Redis keeps it there instead of in the Raft state,
            whose exact set grows without bound; the others stay exact.
        gate: The job-wide politeness gate (`lmdb` or `redis`), None when each worker keeps its own limits.
        job_dir: The job dir (`crawl.job_dir`), or None.
        cluster: The cluster node this run is (its Raft plane holds coordination and seen set), or None.
        queue_settings: How the queue is opened (`visibility_timeout`, `max_attempts`, broker options).
        dedup: Whether the seen set is exact or approximate, and the approximate one's rate and capacity.

    Example:
        >>> from mocra_core.config import Settings
        >>> nats = {"queue": {"url": "nats://127.0.0.1:4222"}, "coordination": {"url": "redis://127.0.0.1/0"}}
        >>> for part in BackendPlan.decide(Settings.from_mapping(nats), job="books").describe().split(", "):
        ...     print(part)
        queue nats://127.0.0.1:4222 (namespace mocra-books)
        seen set redis://127.0.0.1/0
        coordination redis://127.0.0.1/0
        gate redis://127.0.0.1/0
        >>> print(BackendPlan.decide(Settings(), job="books").describe())
        queue memory, seen set memory, coordination memory
    """

    job: str
    shared: bool
    queue: Backend
    coordination: Backend | None
    seen: Backend | None
    gate: Backend | None
    job_dir: str | None = None
    cluster: ClusterConfig | None = None
    queue_settings: QueueSettings = dataclasses.field(default_factory=QueueSettings)
    dedup: DedupSettings = dataclasses.field(default_factory=DedupSettings)

    @property
    def namespace(self) -> str:
        """The job's backend namespace: `mocra-<job>`, anything but letters, digits, `-`, `_` replaced."""
        return "mocra-" + re.sub(r"[^A-Za-z0-9_-]", "_", self.job)

    @classmethod
    def of_job_dir(cls, path: str) -> BackendPlan:
        """The `read_only` plan of the job in the job dir `path` (what `mocra dlq --job-dir` reads).

        Example:
            >>> BackendPlan.of_job_dir("/var/crawl/books").queue
            Backend(kind='lmdb', where='/var/crawl/books/queue')
        """
        from ..config import CrawlSettings, Settings

        return cls.decide(Settings(crawl=CrawlSettings(job_dir=path)), job="", read_only=True)

    @classmethod
    def decide(
        cls, settings: Settings, *, job: str, cluster: ClusterConfig | None = None, read_only: bool = False
    ) -> BackendPlan:
        """The plan of a run of `job` with `settings` (on the `cluster` node, if given).

        `read_only` is the plan of a command looking into a job (`mocra status`, `mocra dlq`): it does not
        check that workers could share the job, and leaves `coordination` None where none is named.

        Raises:
            ConfigError: (not `read_only`) a cluster without a shared queue, or a shared NATS or Kafka
                queue without a shared coordination store.
        """
        if not read_only:
            _check(settings, cluster=cluster is not None)
        url, job_dir, store = settings.queue.url, settings.crawl.job_dir, settings.coordination.url
        shared = _scheme(url) not in ("memory", "lmdb")
        if shared:
            queue = Backend(_kind(_scheme(url)), url)
        elif job_dir is not None:
            queue = Backend("lmdb", str(pathlib.Path(job_dir) / "queue"))
        elif _scheme(url) == "lmdb":
            queue = Backend("lmdb", url.partition("://")[2])
        else:
            queue = Backend("memory")
        return cls(
            job=job,
            shared=shared,
            queue=queue,
            coordination=_coordination(store, url, job_dir, shared=shared, cluster=cluster is not None),
            seen=_seen(store, url, job_dir, shared=shared, cluster=_raft_seen(settings, cluster))
            if settings.crawl.dedup
            else None,
            gate=_gate(store, url, job_dir, shared=shared, cluster=cluster is not None),
            job_dir=job_dir,
            cluster=cluster,
            queue_settings=settings.queue,
            dedup=settings.dedup,
        )

    def describe(self) -> str:
        """The plan for people: each backend and where it is (passwords redacted), for logs and errors."""
        parts = [f"queue {self.queue}" + (f" (namespace {self.namespace})" if self.shared else "")]
        if self.seen is not None:
            parts.append(f"seen set {self.seen}")
        parts.append(f"coordination {self.coordination or 'none (set coordination.url)'}")
        if self.gate is not None:
            parts.append(f"gate {self.gate}")
        if self.job_dir is not None:
            parts.append(f"job dir {self.job_dir}")
        if self.cluster is not None:
            parts.append(f"cluster node {self.cluster.node_id} at {self.cluster.addr}")
        return ", ".join(parts)

    def make_queue(self) -> QueueBackend:
        """The queue backend, not connected (use `async with`).

        A broker's queue is namespaced by the job name and gets the `[queue.*]` options of its scheme, so
        any process that opens it with the same settings and job reaches the queues of the job's workers.

        Example:
            >>> from mocra_core.config import Settings
            >>> redis = Settings.from_mapping({"queue": {"url": "redis://127.0.0.1:6379/0"}})
            >>> BackendPlan.decide(redis, job="books").make_queue()
            <RedisStreamsQueue 'redis://127.0.0.1:6379/0' namespace='mocra-books'>
            >>> BackendPlan.decide(Settings(), job="books").make_queue()
            <SpillingQueue threshold=100000 spilled=0>
        """
        return _backend_makers.make_queue(self)

    def read_queue(self) -> AbstractAsyncContextManager[QueueView]:
        """The queues to read (dead letters, pending counts), also while the job runs (`async with`).

        An LMDB queue (a job dir's) is read without taking it from the process that runs the job; a
        broker's is the queue itself, as its workers see it.

        Raises:
            ConfigError: (on entering) an LMDB directory that holds no queue.
        """
        return _backend_makers.read_queue(self)

    def make_coordination(
        self, plane: ControlPlane | None = None, redis: RedisClients | None = None
    ) -> Coordination:
        """The coordination store, not connected (a cluster's needs its started `plane`).

        A Redis store takes its client from `redis` (the run's, shared with the seen set and gate on the
        same server) when given, else makes one of its own.

        Raises:
            ConfigError: the plan names none (a `read_only` plan of a NATS or Kafka job without
                `coordination.url`).
        """
        return _backend_makers.make_coordination(self, plane, redis)

    def make_seen(
        self, coordination: Coordination, plane: ControlPlane | None = None, redis: RedisClients | None = None
    ) -> SeenSet | None:
        """The seen set, not opened; None without dedup. `coordination` holds it when its kind says so.

        A Redis set takes its client from `redis` when given (see `make_coordination`).
        """
        return _backend_makers.make_seen(self, coordination, plane, redis)

    def make_gate(self, redis: RedisClients | None = None) -> DomainGate | None:
        """The job-wide politeness gate, not opened; None for one process (its `DomainLimiter` is the job).

        A Redis gate takes its client from `redis` when given (see `make_coordination`).
        """
        return _backend_makers.make_gate(self, redis)


def _check(settings: Settings, *, cluster: bool) -> None:
    """Fail before connecting to anything when the queue and coordination settings cannot work together."""
    url = settings.queue.url
    shared = _scheme(url) not in ("memory", "lmdb")
    if cluster and not shared:
        raise ConfigError(
            "queue.url",
            f"the nodes of a cluster share a crawl through a broker, got {url!r}: "
            "set queue.url=nats://… (or redis://…, kafka://…; `mocra run --queue URL`)",
            source="settings",  # a clash of settings, from wherever each came
        )
    shared_store = cluster or settings.coordination.url is not None or settings.crawl.job_dir is not None
    if shared and _scheme(url) not in _REDIS and not shared_store:
        raise ConfigError(
            "coordination.url",
            f"workers sharing a {_scheme(url)} queue need a shared coordination store: "
            "set coordination.url=redis://… (any host) or crawl.job_dir=DIR (workers on one host)",
            source="settings",
        )


def _coordination(
    store: str | None, queue: str, job_dir: str | None, *, shared: bool, cluster: bool
) -> Backend | None:
    """The coordination store: the cluster's plane, `coordination.url`, else the job dir's, memory, Redis."""
    if cluster:
        return Backend("cluster")
    if store is None:
        if job_dir is not None:
            return Backend("lmdb", str(pathlib.Path(job_dir) / "coordination"))
        if not shared:
            return Backend("memory")
        if _scheme(queue) not in _REDIS:
            return None  # a NATS or Kafka job names none: `_check` refuses it for a run
        store = queue
    if _scheme(store) == "lmdb":
        return Backend("lmdb", store.partition("://")[2])
    if _scheme(store) in _REDIS:
        return Backend("redis", store)
    return Backend("memory")


def _raft_seen(settings: Settings, cluster: ClusterConfig | None) -> bool:
    """Whether a run keeps its seen set in the Raft state.

    A cluster node does, unless `dedup.approximate` and a Redis (the queue's or `coordination.url`) can
    hold the Bloom filter instead: the Raft state's exact set grows without bound on every node.
    """
    if cluster is None:
        return False
    redis = settings.coordination.url or settings.queue.url
    return not (settings.dedup.approximate and _scheme(redis) in _REDIS)


def _seen(store: str | None, queue: str, job_dir: str | None, *, shared: bool, cluster: bool) -> Backend:
    """The seen set: shared by the workers of a job when the queue is (Redis's own set where there is one).

    `cluster`: the seen set is in the Raft state (see `_raft_seen`).
    """
    if cluster:
        return Backend("cluster")
    if shared:
        redis = store or queue
        return Backend("redis", redis) if _scheme(redis) in _REDIS else Backend("coordination")
    if job_dir is not None:
        return Backend("lmdb", str(pathlib.Path(job_dir) / "seen"))
    return Backend("memory")


def _gate(
    store: str | None, queue: str, job_dir: str | None, *, shared: bool, cluster: bool
) -> Backend | None:
    """The job-wide politeness gate of a shared queue, on the coordination store's backend.

    `RedisDomainGate` when the coordination store is Redis, `LmdbDomainGate` (directory `gates` in the
    job dir, or `<coordination dir>-gates`) when it is LMDB. One process needs none, nor does a `memory://`
    coordination store (each worker keeps its own limits), nor a cluster without `coordination.url` (each
    node takes its share of the limits; with `coordination.url` set, that store's gate holds them exactly).
    """
    if not shared or (cluster and store is None):
        return None
    if store is None:
        if job_dir is not None:
            return Backend("lmdb", str(pathlib.Path(job_dir) / "gates"))
        store = queue
    if _scheme(store) == "lmdb":
        return Backend("lmdb", store.partition("://")[2].rstrip("/") + "-gates")
    if _scheme(store) in _REDIS:
        return Backend("redis", store)
    return None
