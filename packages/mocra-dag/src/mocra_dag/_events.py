"""Node state changes as `NodeEvent`s, delivered to an `EventSink`."""

from __future__ import annotations

import enum
import logging
from typing import Protocol

import msgspec

__all__ = ("EventLog", "EventLogger", "EventSink", "NodeEvent", "NodeStatus")


class NodeStatus(enum.StrEnum):
    """The state of one node in one run.

    Each node of a run starts `PENDING` (or `RESTORED`, when a previous run with the same id already
    succeeded it), goes `RUNNING` for each attempt (`RETRYING` between attempts) and ends in exactly one
    of `SUCCEEDED`, `CACHED` (output reused by idempotency key), `FAILED`, `SKIPPED` (an upstream failed,
    with `on_failure="continue"`) or `CANCELLED` (the run was cancelled, timed out, or another node failed
    with `on_failure="cancel"`).
    """

    PENDING = "pending"
    RESTORED = "restored"
    RUNNING = "running"
    RETRYING = "retrying"
    SUCCEEDED = "succeeded"
    CACHED = "cached"
    FAILED = "failed"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"

    @property
    def is_final(self) -> bool:
        """Whether a node stays in this state for the rest of the run."""
        return self not in (NodeStatus.PENDING, NodeStatus.RUNNING, NodeStatus.RETRYING)


class NodeEvent(msgspec.Struct, frozen=True):
    """One state change of one node.

    Attributes:
        run_id: The run.
        node: The node id.
        status: The new state.
        attempt: The attempt it concerns (1-based), 0 before the first attempt.
        at: When, in seconds on the scheduler's clock.
        error: The error of a `FAILED` node or of the attempt before `RETRYING`.
        delay: Seconds until the next attempt (`RETRYING` only).
    """

    run_id: str
    node: str
    status: NodeStatus
    attempt: int
    at: float
    error: BaseException | None = None
    delay: float | None = None


class EventSink(Protocol):
    """Receives every `NodeEvent` of every run, in order, on the event loop.

    `emit` is called synchronously in the scheduler's hot path: it must be quick and must not block
    (hand the event to a memory object stream with `send_nowait` for slow consumers). An exception
    it raises fails the node the event is about (or the whole run, for events outside a node's attempt).
    """

    def emit(self, event: NodeEvent) -> None:
        """Receive one event."""
        ...


class EventLog:
    """An `EventSink` that keeps every event in `events`, for inspection and tests.

    Example:
        >>> log = EventLog()
        >>> log.emit(NodeEvent("r1", "a", NodeStatus.PENDING, 0, 0.0))
        >>> log.emit(NodeEvent("r1", "a", NodeStatus.RUNNING, 1, 0.0))
        >>> [str(status) for status in log.statuses("a")]
        ['pending', 'running']
    """

    __slots__ = ("events",)

    def __init__(self) -> None:
        self.events: list[NodeEvent] = []

    def emit(self, event: NodeEvent) -> None:
        """Append the event."""
        self.events.append(event)

    def statuses(self, node: str, run_id: str | None = None) -> list[NodeStatus]:
        """The states `node` went through, in order (of one run if `run_id` is given)."""
        return [e.status for e in self.events if e.node == node and (run_id is None or e.run_id == run_id)]


class EventLogger:
    """An `EventSink` that logs each event: failures at WARNING, retries at INFO, the rest at DEBUG.

    Args:
        logger: Where to log; defaults to the `mocra_dag.events` logger.
    """

    __slots__ = ("_logger",)

    def __init__(self, logger: logging.Logger | None = None) -> None:
        self._logger = logger or logging.getLogger("mocra_dag.events")

    def emit(self, event: NodeEvent) -> None:
        """Log the event."""
        if event.status is NodeStatus.FAILED:
            level = logging.WARNING
        elif event.status is NodeStatus.RETRYING:
            level = logging.INFO
        else:
            level = logging.DEBUG
        if self._logger.isEnabledFor(level):
            self._logger.log(
                level,
                "run %s node %s %s (attempt %d)%s",
                event.run_id,
                event.node,
                event.status.value,
                event.attempt,
                f": {event.error!r}" if event.error is not None else "",
            )
