"""`InProcessQueue`: what the memory and LMDB queues share.

One consumer group per topic, and leasing with waits that wake for publishes, due delays and expiring
leases.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import anyio
import anyio.lowlevel

from ._checks import check_max_messages

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from ._delivery import Delivery
    from ._waiters import Waiters

__all__ = ("InProcessQueue",)


class _Lease(Protocol):
    deadline: float


class _TopicState(Protocol):
    group: str | None
    delayed: list[Any]  # a heap of tuples whose first item is the due time
    waiters: Waiters

    @property
    def leases(self) -> Mapping[int, _Lease]: ...  # token -> lease, oldest deadline first


S = TypeVar("S", bound=_TopicState)


class InProcessQueue(abc.ABC, Generic[S]):
    """The consume side of a queue that lives in this process; subclasses keep the messages."""

    visibility_timeout: float
    _clock: Callable[[], float]

    @abc.abstractmethod
    def _topic(self, topic: str) -> S:
        """The state of `topic`, created on first use."""

    @abc.abstractmethod
    def _take(self, topic: str, max_messages: int) -> list[Delivery]:
        """Lease up to `max_messages` ready messages of `topic` now, without waiting."""

    async def consume(
        self, topic: str, *, group: str, max_messages: int = 1, wait: float = 1.0
    ) -> Sequence[Delivery]:
        """Lease up to `max_messages` messages of `topic` (see `QueueBackend.consume`)."""
        state = self._topic(topic)
        if state.group != group:
            if state.group is not None:
                raise ValueError(f"topic {topic!r} is consumed by group {state.group!r}, not {group!r}")
            state.group = group
        check_max_messages(max_messages)
        # Messages ready: a cancellation check, no trip through the event loop (a worker going from one
        # message to the next does not yield twice per message). Nothing ready: a full checkpoint.
        await anyio.lowlevel.checkpoint_if_cancelled()
        found = self._take(topic, max_messages)
        if found:
            return found
        if wait <= 0:
            await anyio.lowlevel.cancel_shielded_checkpoint()  # a poll loop still lets others run
            return found
        return await state.waiters.wait_for(
            lambda: self._take(topic, max_messages), lambda: self._due_in(state), wait
        )

    def _due_in(self, state: S) -> float | None:
        due: float | None = state.delayed[0][0] if state.delayed else None
        if state.leases:
            deadline = next(iter(state.leases.values())).deadline
            due = deadline if due is None else min(due, deadline)
        return None if due is None else due - self._clock()
