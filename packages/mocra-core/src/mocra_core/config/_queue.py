"""Settings of the queues between stages and of what a job's workers share (`[queue]`, `[coordination]`)."""

from __future__ import annotations

from typing import Literal

import msgspec

from .._bounds import at_least, positive
from ._schemes import check_scheme

__all__ = (
    "CoordinationSettings",
    "KafkaQueueSettings",
    "NatsQueueSettings",
    "QueueSettings",
    "RedisQueueSettings",
)

_QUEUE_SCHEMES = ("memory", "lmdb", "redis", "rediss", "nats", "kafka")
_COORDINATION_SCHEMES = ("memory", "lmdb", "redis", "rediss")


class RedisQueueSettings(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """Options of a `redis://` queue (`RedisStreamsQueue`).

    Attributes:
        connect_timeout: Seconds to reach the server when opening.
        reconnect_timeout: Seconds a call keeps retrying a lost server before raising `BackendUnavailable`.

    Example:
        >>> RedisQueueSettings(reconnect_timeout=120).reconnect_timeout
        120
    """

    connect_timeout: float = 5.0
    reconnect_timeout: float = 30.0

    def __post_init__(self) -> None:
        positive(self, "connect_timeout", "reconnect_timeout")


class NatsQueueSettings(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """Options of a `nats://` queue (`NatsJetStreamQueue`).

    Attributes:
        storage: Where JetStream keeps the streams it creates: `"file"` (survives a server restart) or
            `"memory"`.
        timeout: Seconds one request to the server may take.

    Example:
        >>> from mocra_core.config import Settings
        >>> Settings.from_mapping({"queue": {"nats": {"storage": "memory"}}}).queue.nats.storage
        'memory'
    """

    storage: Literal["file", "memory"] = "file"
    timeout: float = 5.0

    def __post_init__(self) -> None:
        positive(self, "timeout")


class KafkaQueueSettings(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """Options of a `kafka://` queue (`KafkaQueue`).

    Attributes:
        partitions: Partitions of each topic the queue creates: at most this many workers share a topic.
        session_timeout: Seconds without a heartbeat before the group gives a worker's partitions to the
            others. Apache Kafka accepts 6 (the default here, its least) to 1,800 by default; tansu also
            takes less, and a worker joins its groups in half of it there.
        fetch_wait: Seconds the reads of the state and DLQ topics wait at the broker per fetch.
        fetch_wait_min: Seconds a worker's fetches wait at the broker, at first: on tansu, which holds
            each fetch for its wait, the latency of each hop of a crawl. On Apache Kafka (which answers
            as soon as records arrive) a short wait only means more idle fetches: 0.5 suits it.
        fetch_wait_max: The most the wait grows to. tansu answers a fetch with what it read by then, and
            reads a partition slower the longer it is; a worker far behind whose fetches keep answering
            short doubles its wait, up to this.
        reconnect_timeout: Seconds a call keeps retrying a lost broker before raising `BackendUnavailable`.
        lanes: Priority lanes created with each topic, by `Request.priority` (any 64-bit int: -1 is below
            the default 0); another lane is created when first used, and every worker's groups rebalance then.

    Example:
        >>> KafkaQueueSettings(partitions=0)
        Traceback (most recent call last):
        ...
        ValueError: partitions: must be at least 1, got 0
    """

    partitions: int = 4
    session_timeout: float = 6.0
    fetch_wait: float = 0.05
    fetch_wait_min: float = 0.01
    fetch_wait_max: float = 1.0
    reconnect_timeout: float = 30.0
    lanes: tuple[int, ...] = (-1, 0, 1)

    def __post_init__(self) -> None:
        at_least(self, 1, "partitions")
        positive(self, "session_timeout", "fetch_wait", "fetch_wait_min", "fetch_wait_max")
        positive(self, "reconnect_timeout")
        if self.fetch_wait_min > self.fetch_wait_max:
            waits = f"{self.fetch_wait_min!r} > {self.fetch_wait_max!r}"
            raise ValueError(f"fetch_wait_min: must be at most fetch_wait_max, got {waits}")
        for lane in self.lanes:
            if not -(2**63) <= lane < 2**63:
                raise ValueError(f"lanes: must be 64-bit ints, got {lane}")


class QueueSettings(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """Where the queues between stages live.

    Attributes:
        url: `memory://` (default; one process), `lmdb:///dir` (on disk), or a shared broker: `redis://…`,
            `nats://…`, `kafka://…`; another scheme fails at start.
        visibility_timeout: Seconds a leased message may stay unacknowledged before it is redelivered (> 0).
        liveness_timeout: Redis and NATS: seconds after a worker's last sign of life (a heartbeat or lease
            extension, sent every fifth of it) before the others take over what it leased (> 0).
        max_attempts: Deliveries of one message before it is dead-lettered whatever the retry policy says
            (at least 1: the first delivery).
        spill_threshold: In memory: requests kept as objects before new ones spill to a temporary LMDB
            queue on disk (bounds the memory of a large frontier; at least 1).
        redis: Options used when `url` is `redis://…` (`[queue.redis]`).
        nats: Options used when `url` is `nats://…` (`[queue.nats]`).
        kafka: Options used when `url` is `kafka://…` (`[queue.kafka]`).

    Example:
        >>> from mocra_core.config import Settings
        >>> Settings.from_mapping({"queue": {"kafka": {"partitions": 8}}}).queue.kafka.partitions
        8
    """

    url: str = "memory://"
    visibility_timeout: float = 300.0
    liveness_timeout: float = 10.0
    max_attempts: int = 10
    spill_threshold: int = 100_000
    redis: RedisQueueSettings = RedisQueueSettings()
    nats: NatsQueueSettings = NatsQueueSettings()
    kafka: KafkaQueueSettings = KafkaQueueSettings()

    def __post_init__(self) -> None:
        check_scheme("url", self.url, _QUEUE_SCHEMES, example="redis://127.0.0.1:6379/0")
        if self.url.startswith("lmdb://") and not self.url.removeprefix("lmdb://"):
            raise ValueError("url: lmdb:// needs a directory, e.g. lmdb:///var/crawl/queue")
        positive(self, "visibility_timeout", "liveness_timeout")
        at_least(self, 1, "max_attempts", "spill_threshold")


class CoordinationSettings(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """Where the workers of a job share gates, locks, seed-once flags and (with Redis) the seen set.

    Attributes:
        url: `memory://` (one process), `lmdb:///dir` (processes on one host) or `redis://host:port/db`.
            `None` picks one: in memory for a memory queue, the job dir's LMDB with `crawl.job_dir`, the
            queue's Redis for a Redis queue; NATS and Kafka jobs of several workers need it set (or a
            shared `crawl.job_dir` on one host). Another scheme fails at start.
    """

    url: str | None = None

    def __post_init__(self) -> None:
        if self.url is not None:
            check_scheme("url", self.url, _COORDINATION_SCHEMES, example="redis://127.0.0.1:6379/0")
