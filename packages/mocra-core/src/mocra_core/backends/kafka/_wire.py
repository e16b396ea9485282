"""Kafka names of a `KafkaQueue` and `Wire`, its producer and admin client with retries across outages."""

from __future__ import annotations

import logging
import math
import string
import time
from typing import TYPE_CHECKING, Any

import anyio

from ..._errors import BackendError, BackendUnavailable, ConfigError
from ._driver import (
    driver_errors,
    is_retriable,
    kafka_error,
    new_admin,
    new_client,
    new_consumer,
    new_topic,
)
from ._produce import DirectProducer

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable, Sequence

    from ._driver import Admin, Client, Consumer, Out, TopicPartition

__all__ = ("ATTEMPT", "DUE", "RAW", "Names", "Wire", "due_header", "parse_url")

logger = logging.getLogger(__name__)

DUE = "mocra-due"
"""Header: epoch milliseconds before which a record is held back (delayed publish, nack with delay)."""
ATTEMPT = "mocra-attempt"
"""Header of a record republished for another attempt (an expired lease, a nack): the attempt, in decimal.
The envelope's `attempt` is what consumers read; the header lets Kafka tools (kcat, consoles) see it."""
RAW = "mocra-raw"
"""Header of a DLQ record whose `body` is the raw record value (not an envelope, or not decodable)."""


def parse_url(url: str) -> str:
    """The bootstrap servers (`host:port,...`) of a `kafka://host[:port][,host[:port]...]` URL.

    Example:
        >>> parse_url("kafka://127.0.0.1:9092,broker-2")
        '127.0.0.1:9092,broker-2:9092'
    """
    scheme, sep, rest = url.partition("://")
    hosts = rest.partition("/")[0].partition("?")[0]
    if scheme != "kafka" or not sep or not hosts:
        raise ConfigError("queue.url", f"expected kafka://host:port, got {url!r}")
    if "@" in hosts:
        raise ConfigError("queue.url", "credentials in kafka:// URLs are not supported")
    servers = []
    for host in hosts.split(","):
        name, colon, port = host.rpartition(":") if ":" in host else (host, "", "")
        if not colon:
            name, port = host, "9092"
        if not name or not port.isdigit():
            raise ConfigError("queue.url", f"bad host {host!r} in {url!r}; expected host:port")
        servers.append(f"{name}:{port}")
    return ",".join(servers)


_SAFE = frozenset(string.ascii_letters + string.digits + "-")


def _escape(topic: str) -> str:
    """A queue topic as a Kafka name part: `[A-Za-z0-9-]` kept, `_` doubled, anything else `_<hex>_`."""
    if all(ch in _SAFE for ch in topic):
        return topic
    return "".join(ch if ch in _SAFE else "__" if ch == "_" else f"_{ord(ch):x}_" for ch in topic)


class Names:
    """Kafka names in a namespace: topics `ns.<topic>.<lane>`, `ns.<topic>.dlq`; groups `ns.<topic>.<group>`.

    The state topic of a lane topic in a group (`_state.py`) is `ns.<topic>.<lane>.acks.<group>`.

    Example:
        >>> names = Names("crawl")
        >>> names.lane("fetch", -3), names.dlq("fetch"), names.group("fetch", "download")
        ('crawl.fetch.-3', 'crawl.fetch.dlq', 'crawl.fetch.download')
        >>> names.lane("a.b_c", 0), names.lane_of("fetch", "crawl.fetch.-3")
        ('crawl.a_2e_b__c.0', -3)
        >>> names.acks("crawl.fetch.0", "download"), names.lane_of("fetch", "crawl.fetch.0.acks.download")
        ('crawl.fetch.0.acks.download', None)
    """

    __slots__ = ("_cache", "namespace")

    def __init__(self, namespace: str) -> None:
        if not namespace or not all(ch in _SAFE or ch == "_" for ch in namespace):
            raise ValueError(f"namespace must be non-empty letters, digits, '-' or '_', got {namespace!r}")
        self.namespace = namespace
        self._cache: dict[str, str] = {}

    def prefix(self, topic: str) -> str:
        """What every Kafka name of `topic` starts with."""
        prefix = self._cache.get(topic)
        if prefix is None:
            if not isinstance(topic, str) or not topic or "\0" in topic:
                raise ValueError(f"topic must be a non-empty str without NUL, got {topic!r}")
            prefix = self._cache[topic] = f"{self.namespace}.{_escape(topic)}."
            if len(prefix) > 220:
                raise ValueError(f"topic {topic!r} is too long for a Kafka topic name")
        return prefix

    def lane(self, topic: str, lane: int) -> str:
        """The Kafka topic of one priority lane."""
        if not isinstance(lane, int) or not -(2**63) <= lane < 2**63:
            raise ValueError(f"priority must be a 64-bit int, got {lane!r}")
        return f"{self.prefix(topic)}{lane}"

    def dlq(self, topic: str) -> str:
        """The Kafka topic of `topic`'s dead-letter queue."""
        return f"{self.prefix(topic)}dlq"

    def group(self, topic: str, group: str) -> str:
        """The Kafka consumer group of (`topic`, `group`)."""
        return f"{self.prefix(topic)}{group}"

    def acks(self, lane_topic: str, group: str) -> str:
        """The state topic of a lane topic's partitions in `group` (see `_state.py`)."""
        name = f"{lane_topic}.acks.{_escape(group)}"
        if len(name) > 249:
            raise ValueError(f"group {group!r} is too long for a Kafka topic name ({name!r})")
        return name

    def lane_of(self, topic: str, name: str) -> int | None:
        """The lane of Kafka topic `name` if it is a lane of `topic`, else `None`."""
        prefix = self.prefix(topic)
        if not name.startswith(prefix):
            return None
        rest = name[len(prefix) :]
        digits = rest.removeprefix("-")
        if rest == "0" or (digits.isdigit() and not digits.startswith("0")):
            return int(rest)
        return None


class Wire:
    """The producer and admin client of one `KafkaQueue`, with retries across broker outages.

    Every call retries outages (`is_retriable`) for up to `reconnect_timeout` seconds, re-creating topics
    a restarted broker lost, then raises `BackendUnavailable`; other driver errors raise `BackendError`.
    Produces go out as requests of its own (`DirectProducer`): produces to partitions of one broker made
    while its request is on the wire share the next request, a partition's records in order.
    """

    def __init__(self, url: str, *, request_timeout: float, reconnect_timeout: float) -> None:
        self.url = url
        self.servers = parse_url(url)
        self.request_timeout = request_timeout
        self.reconnect_timeout = reconnect_timeout
        self.topics: dict[str, int] = {}  # Kafka topic -> partition count, as this queue knows them
        self._configs: dict[str, dict[str, str]] = {}
        self._client: Client | None = None
        self._producer: DirectProducer | None = None
        self._admin: Admin | None = None

    def options(self) -> dict[str, Any]:
        """Client options every aiokafka client of this queue shares."""
        return {
            "bootstrap_servers": self.servers,
            "client_id": "mocra",
            "request_timeout_ms": max(1000, int(self.request_timeout * 1000)),
            "retry_backoff_ms": 50,
        }

    async def connect(self, seconds: float) -> None:
        """Start the producing and admin clients; `BackendUnavailable` if the broker cannot be reached."""
        client = new_client(**self.options())
        admin = new_admin(**self.options())
        try:
            with anyio.fail_after(seconds):
                await client.bootstrap()
                await admin.start()
        except (TimeoutError, OSError, kafka_error) as exc:
            with anyio.CancelScope(shield=True):
                await _quietly(client.close())
                await _quietly(admin.close())
            problem = str(exc) or f"no answer in {seconds:g} s"
            raise BackendUnavailable("kafka", self.url, f"cannot connect: {problem}") from None
        self._client, self._admin = client, admin
        self._producer = DirectProducer(client, timeout=self.request_timeout)

    async def close(self) -> None:
        """Stop the clients (bounded); produces have all returned or raised by then."""
        client, admin, self._client, self._admin, self._producer = self._client, self._admin, None, None, None
        with anyio.move_on_after(self.request_timeout, shield=True):
            if client is not None:
                await _quietly(client.close())
            if admin is not None:
                await _quietly(admin.close())

    def consumer(self, **options: Any) -> Consumer:
        """A new (not started) consumer; `group_id` makes it a group member."""
        return new_consumer(
            enable_auto_commit=False, auto_offset_reset="earliest", **self.options(), **options
        )

    async def retrying(self, what: str, call: Callable[[], Awaitable[Any]], topic: str = "") -> Any:
        """Run `call` (one attempt bounded by `request_timeout`), retrying outages; see the class."""
        deadline = time.monotonic() + self.reconnect_timeout
        delay = 0.05
        while True:
            if self._admin is None:
                raise anyio.ClosedResourceError
            try:
                with anyio.fail_after(self.request_timeout):
                    return await call()
            except (TimeoutError, OSError, kafka_error) as exc:
                if not is_retriable(exc):
                    raise BackendError("kafka", self.url, f"{what} failed: {exc!r}") from None
                if time.monotonic() + delay > deadline:
                    raise BackendUnavailable("kafka", self.url, f"{what} failed: {exc!r}") from None
                logger.debug("kafka %s failed (%r); retrying", what, exc)
            await anyio.sleep(delay)
            delay = min(delay * 2, 1.0)
            if topic and topic in self.topics:  # the broker may have lost it: create it again
                partitions = self.topics.pop(topic)
                await self.ensure(topic, partitions, self._configs.get(topic))

    async def ensure(self, name: str, partitions: int, configs: dict[str, str] | None = None) -> int:
        """Create Kafka topic `name` unless it exists; returns its partition count."""
        known = self.topics.get(name)
        if known is not None:
            return known
        admin = self._admin
        if admin is None:
            raise anyio.ClosedResourceError
        self._configs[name] = configs or {}
        new = new_topic(name, partitions, configs or {})

        async def create() -> int:
            response = await admin.create_topics([new])
            code = response.topic_errors[0][1]
            if code == 0:
                return partitions
            if code != driver_errors.TopicAlreadyExistsError.errno:
                raise driver_errors.for_code(code)(f"cannot create topic {name!r}")
            [meta] = await admin.describe_topics([name])
            count = len(meta["partitions"])
            if not count:
                raise driver_errors.UnknownTopicOrPartitionError(name)
            return count

        count: int = await self.retrying(f"creating topic {name!r}", create)
        self.topics[name] = count
        return count

    async def list_topics(self, prefix: str) -> dict[str, int]:
        """Kafka topics whose name starts with `prefix`, with their partition counts (asks the broker)."""
        admin = self._admin
        if admin is None:
            raise anyio.ClosedResourceError

        async def describe() -> list[dict[str, Any]]:
            return await admin.describe_topics()

        metas: list[dict[str, Any]] = await self.retrying("listing topics", describe)
        found = {
            m["topic"]: len(m["partitions"])
            for m in metas
            if m["topic"].startswith(prefix) and m["partitions"] and not m["error_code"]
        }
        self.topics.update(found)
        return found

    async def produce(self, name: str, partition: int, records: Sequence[Out]) -> int:
        """Append `records` to one partition, in order; returns the offset after the last one."""

        async def send() -> int:
            producer = self._producer
            if producer is None:
                raise anyio.ClosedResourceError
            return await producer.produce(name, partition, records)

        end: int = await self.retrying(f"publishing to {name!r}", send, topic=name)
        return end

    async def group_offsets(
        self, group_id: str, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, int]:
        """Committed offsets of a consumer group (-1 where it has none)."""
        admin = self._admin
        if admin is None:
            raise anyio.ClosedResourceError

        async def fetch() -> dict[TopicPartition, Any]:
            return await admin.list_consumer_group_offsets(group_id, partitions=partitions)

        found: dict[TopicPartition, Any] = await self.retrying("reading committed offsets", fetch)
        return {tp: found[tp].offset if tp in found else -1 for tp in partitions}

    async def groups(self, prefix: str) -> list[str]:
        """Consumer groups whose id starts with `prefix`."""
        admin = self._admin
        if admin is None:
            raise anyio.ClosedResourceError

        async def fetch() -> list[tuple[str, str]]:
            return await admin.list_consumer_groups()

        found: list[tuple[str, str]] = await self.retrying("listing consumer groups", fetch)
        return sorted(group for group, _ in found if group.startswith(prefix))

    async def delete_topics(self, names: Iterable[str]) -> None:
        """Delete Kafka topics (used to clean a namespace up)."""
        admin = self._admin
        if admin is None:
            raise anyio.ClosedResourceError
        names = list(names)
        if names:
            await admin.delete_topics(names)
            for name in names:
                self.topics.pop(name, None)


def due_header(delay: float) -> list[tuple[str, bytes]]:
    """The `DUE` header of a record held back for `delay` seconds from now (none if `delay <= 0`)."""
    if delay <= 0:
        return []
    return [(DUE, str(math.ceil((time.time() + delay) * 1000)).encode())]


async def _quietly(call: Awaitable[object]) -> None:
    try:
        await call
    except Exception as exc:  # closing: nothing more to do about it
        logger.debug("kafka client close failed: %r", exc)
