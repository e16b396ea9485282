"""The aiokafka driver, typed: what `KafkaQueue` calls on it, and the few helpers that need it.

aiokafka ships no type information, so it is imported with `importlib` and its objects are used through
the small Protocols below, which list exactly what the queue calls. Importing this module raises
`ModuleNotFoundError` (naming `aiokafka`) when the `kafka` extra is not installed.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeVar

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

__all__ = (
    "Admin",
    "Client",
    "Consumer",
    "Out",
    "Record",
    "RecordBatch",
    "TopicPartition",
    "driver_errors",
    "is_retriable",
    "kafka_error",
    "new_admin",
    "new_client",
    "new_consumer",
    "new_record_batch",
    "new_topic",
    "partition_for",
    "produce_request",
    "rebalance_listener",
    "set_fetch_wait",
    "topic_partition",
)

_T = TypeVar("_T", bound=type)

_aiokafka: Any = importlib.import_module("aiokafka")  # ModuleNotFoundError without the `kafka` extra
_admin_module: Any = importlib.import_module("aiokafka.admin")
_errors: Any = importlib.import_module("aiokafka.errors")
driver_errors: Any = _errors
"""`aiokafka.errors` (error classes by name, `for_code`)."""
_abc: Any = importlib.import_module("aiokafka.abc")
_range: Any = importlib.import_module("aiokafka.coordinator.assignors.range")
_murmur2: Callable[[bytes], int] = importlib.import_module("aiokafka.partitioner").murmur2
_client_module: Any = importlib.import_module("aiokafka.client")
_records: Any = importlib.import_module("aiokafka.record.default_records")
_produce: Any = importlib.import_module("aiokafka.protocol.produce")

kafka_error: type[Exception] = _errors.KafkaError
"""Base class of every aiokafka error."""

_RETRIABLE: tuple[type[BaseException], ...] = (
    TimeoutError,
    OSError,
    _errors.KafkaTimeoutError,
    _errors.KafkaConnectionError,
    _errors.NodeNotReadyError,
    _errors.NoBrokersAvailable,
    _errors.RequestTimedOutError,
    _errors.UnknownTopicOrPartitionError,
    _errors.NotLeaderForPartitionError,
    _errors.LeaderNotAvailableError,
    _errors.UnknownError,  # tansu answers this while it re-creates a topic after a restart
)

Out = tuple["bytes | None", "bytes | None", "list[tuple[str, bytes]]"]
"""A record to produce: key, value, headers."""


class TopicPartition(NamedTuple):
    """The type of aiokafka's `TopicPartition`; make them with `topic_partition` (aiokafka's own class)."""

    topic: str
    partition: int


def topic_partition(topic: str, partition: int) -> TopicPartition:
    """An aiokafka `TopicPartition`."""
    tp: TopicPartition = _aiokafka.TopicPartition(topic, partition)
    return tp


class Record(Protocol):
    """What the queue reads of an aiokafka `ConsumerRecord`."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: Sequence[tuple[str, bytes]]


class RecordBatch(Protocol):
    """aiokafka's `DefaultRecordBatchBuilder` (record batch format v2)."""

    def append(
        self,
        offset: int,
        timestamp: int | None,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[tuple[str, bytes]],
    ) -> object | None: ...

    def build(self) -> bytearray: ...


class _Cluster(Protocol):
    def leader_for_partition(self, partition: TopicPartition) -> int | None: ...


class Client(Protocol):
    """What the queue calls on an `AIOKafkaClient` (connections and metadata, under every aiokafka client)."""

    cluster: _Cluster

    async def bootstrap(self) -> None: ...
    async def close(self) -> None: ...
    def add_topic(self, topic: str) -> Awaitable[object]: ...
    def force_metadata_update(self) -> Awaitable[object]: ...
    async def send(self, node_id: int, request: Any) -> Any: ...


class Consumer(Protocol):
    """What the queue calls on an `AIOKafkaConsumer`."""

    async def start(self) -> None: ...
    async def stop(self) -> None: ...
    def subscribe(
        self, topics: Sequence[str] = (), pattern: None = None, listener: object = None
    ) -> None: ...
    def assign(self, partitions: Sequence[TopicPartition]) -> None: ...
    def assignment(self) -> set[TopicPartition]: ...
    async def getmany(
        self, *partitions: TopicPartition, timeout_ms: int = 0, max_records: int | None = None
    ) -> dict[TopicPartition, list[Record]]: ...
    async def commit(self, offsets: dict[TopicPartition, int]) -> None: ...
    async def position(self, partition: TopicPartition) -> int: ...
    async def end_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]: ...
    async def beginning_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]: ...
    def seek(self, partition: TopicPartition, offset: int) -> None: ...
    def highwater(self, partition: TopicPartition) -> int | None: ...
    def last_poll_timestamp(self, partition: TopicPartition) -> int | None: ...
    def pause(self, *partitions: TopicPartition) -> None: ...
    def resume(self, *partitions: TopicPartition) -> None: ...
    def unsubscribe(self) -> None: ...


class _Committed(Protocol):
    offset: int


class Admin(Protocol):
    """What the queue calls on an `AIOKafkaAdminClient`."""

    async def start(self) -> None: ...
    async def close(self) -> None: ...
    async def create_topics(self, new_topics: list[Any]) -> Any: ...
    async def delete_topics(self, topics: list[str]) -> Any: ...
    async def describe_topics(self, topics: list[str] | None = None) -> list[dict[str, Any]]: ...
    async def list_consumer_groups(self) -> list[tuple[str, str]]: ...
    async def list_consumer_group_offsets(
        self, group_id: str, partitions: list[TopicPartition] | None = None
    ) -> dict[TopicPartition, _Committed]: ...


def rebalance_listener(cls: _T) -> _T:
    """Register `cls` as an aiokafka `ConsumerRebalanceListener` (the driver checks `isinstance`)."""
    _abc.ConsumerRebalanceListener.register(cls)
    return cls


def is_retriable(exc: BaseException) -> bool:
    """Whether `exc` is an outage (connection, timeout, leadership, a topic lost with the broker's state)."""
    return isinstance(exc, _RETRIABLE) or bool(getattr(exc, "retriable", False))


def partition_for(key: str, partitions: int) -> int:
    """The partition of `key`, as Kafka's Java client computes it (murmur2), so other clients agree."""
    return (_murmur2(key.encode()) & 0x7FFFFFFF) % partitions


def new_client(**options: Any) -> Client:
    """A new (not bootstrapped) `AIOKafkaClient`."""
    client: Client = _client_module.AIOKafkaClient(**options)
    return client


def new_record_batch(max_bytes: int) -> RecordBatch:
    """An empty record batch (format v2, uncompressed, not transactional) of at most `max_bytes`."""
    batch: RecordBatch = _records.DefaultRecordBatchBuilder(2, 0, 0, -1, -1, 0, max_bytes)
    return batch


def produce_request(topics: list[tuple[str, list[tuple[int, bytearray]]]], *, timeout_ms: int) -> Any:
    """A `ProduceRequest` (acks from all in-sync replicas) of one record batch per partition.

    Its response's `topics` hold, per topic, `(partition, error_code, offset, ...)` tuples, `offset`
    being the first one of the batch (aiokafka picks the version the broker speaks).
    """
    return _produce.ProduceRequest(transactional_id=None, required_acks=-1, timeout=timeout_ms, topics=topics)


def new_admin(**options: Any) -> Admin:
    """A new (not started) `AIOKafkaAdminClient`."""
    admin: Admin = _admin_module.AIOKafkaAdminClient(**options)
    return admin


def new_consumer(**options: Any) -> Consumer:
    """A new (not started) `AIOKafkaConsumer`; a `group_id` makes it a group member (range assignor)."""
    if "group_id" in options:
        options["partition_assignment_strategy"] = (_range.RangePartitionAssignor,)
    consumer: Consumer = _aiokafka.AIOKafkaConsumer(**options)
    return consumer


def set_fetch_wait(consumer: Consumer, seconds: float) -> bool:
    """Make the started `consumer`'s next fetch requests wait `seconds` at the broker; False if it cannot.

    aiokafka takes the wait (`fetch_max_wait_ms`) only in the consumer's constructor, and its `Fetcher`
    reads it again for every fetch request it builds (aiokafka 0.14), so this sets the fetcher's
    attribute: the one private name the queue touches. A fetch in flight keeps the wait it was sent with.
    Without that attribute (another aiokafka) it returns False and the consumer keeps its wait.
    """
    fetcher = getattr(consumer, "_fetcher", None)
    if not isinstance(getattr(fetcher, "_fetch_max_wait_ms", None), int):
        return False
    fetcher._fetch_max_wait_ms = max(1, round(seconds * 1000))  # type: ignore[union-attr]
    return True


def new_topic(name: str, partitions: int, configs: dict[str, str]) -> Any:
    """An admin `NewTopic` (replication factor 1: the broker's default placement)."""
    return _admin_module.NewTopic(name, partitions, 1, topic_configs=configs)
