"""`Readers`: a `KafkaQueue`'s readers, one per (topic, group), each run in the queue's background tasks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio

from ._fetch_wait import FetchWait
from ._reader import Reader, lanes_of

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from anyio.abc import TaskGroup

    from ...queue._codec import Codec
    from ...queue._delivery import Delivery
    from ._lanes import Lanes
    from ._wire import Names, Wire

__all__ = ("ReaderSettings", "Readers")


@dataclass(frozen=True, slots=True)
class ReaderSettings:
    """What every reader of a queue is made with (see `KafkaQueue`'s arguments)."""

    codec: Codec
    visibility_timeout: float
    max_attempts: int
    session_timeout: float
    fetch_wait: float
    fetch_wait_min: float
    fetch_wait_max: float


class Readers:
    """The readers of one queue: made on first use of a (topic, group), found again by topic or lease.

    Args:
        wire: The queue's clients.
        names: Its topic and group names.
        lanes: Its lanes (created on first use; `new_lane` subscribes every reader of the topic).
        settings: What each reader is made with.
        check: Raises when the queue is closed or not entered.
    """

    def __init__(
        self, wire: Wire, names: Names, lanes: Lanes, settings: ReaderSettings, check: Callable[[], None]
    ) -> None:
        self._wire = wire
        self._names = names
        self._lanes = lanes
        self._settings = settings
        self._check = check
        self._readers: dict[tuple[str, str], Reader] = {}
        self._by_topic: dict[str, list[Reader]] = {}
        self._lock = anyio.Lock()

    def __getitem__(self, key: tuple[str, str]) -> Reader:
        """The reader of (topic, group), made already (`KeyError` if not)."""
        return self._readers[key]

    def all(self) -> Iterable[Reader]:
        """Every reader made so far."""
        return self._readers.values()

    def of_topic(self, topic: str) -> Sequence[Reader]:
        """The readers of `topic` (one per group)."""
        return self._by_topic.get(topic, ())

    def new_lane(self, topic: str, name: str, lane: int) -> None:
        """Lane `lane` (Kafka topic `name`) of `topic` was created: every reader of the topic subscribes."""
        for reader in self._by_topic.get(topic, ()):
            reader.add_lanes({name: lane})

    def owner(self, delivery: Delivery) -> Reader | None:
        """The reader that leased `delivery`, or None (stale, or another process's)."""
        for reader in self._by_topic.get(delivery.topic, ()):
            if delivery._lease in reader.leases:
                return reader
        return None

    async def get(self, topic: str, group: str, background: TaskGroup) -> Reader:
        """The reader of (topic, group), made and started in `background` on first use; once it joined."""
        reader = self._readers.get((topic, group))
        if reader is None:
            async with self._lock:
                self._check()
                reader = self._readers.get((topic, group))
                if reader is None:
                    reader = await self._new(topic, group, background)
        await reader.wait_joined(self._wire.reconnect_timeout)
        return reader

    async def _new(self, topic: str, group: str, background: TaskGroup) -> Reader:
        if not isinstance(group, str) or not group:
            raise ValueError(f"group must be a non-empty str, got {group!r}")
        await self._lanes.ensure(topic, 0)
        found = await self._wire.list_topics(self._names.prefix(topic))
        settings = self._settings
        waits = FetchWait(low=settings.fetch_wait_min, high=settings.fetch_wait_max)
        reader = Reader(
            topic,
            group,
            wire=self._wire,
            names=self._names,
            codec=settings.codec,
            visibility_timeout=settings.visibility_timeout,
            max_attempts=settings.max_attempts,
            session_timeout=settings.session_timeout,
            fetch_wait=settings.fetch_wait,
            waits=waits,
            published=self._lanes.published,
        )
        reader.lanes = lanes_of(self._names, topic, found)
        self._readers[(topic, group)] = reader
        self._by_topic.setdefault(topic, []).append(reader)
        background.start_soon(reader.run, name=f"kafka-reader-{reader.group_id}")
        return reader
