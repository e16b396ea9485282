"""`Lifecycle`: the states of a run's long-lived parts, and the stream of their changes.

Every long-lived part of a run — the engine, each stage, each backend connection, the cluster node —
goes `prepare → ready → active → draining → stopped`, or `failed` (naming the part and the cause):

- `prepare`: being built or connected; `ready`: up, taking no work yet;
- `active`: working; `draining`: taking no new work, finishing (or handing back) what it holds;
- `stopped`: closed; `failed`: it could not start, or broke (`StateChange.cause` says why).

A part may skip a step (a run stopped before it began goes `ready → stopped`), never go back.
Subscribers (`subscribe`) get every change so far, then each one as it happens; their streams end once
the engine is `stopped` or `failed` and every part has settled.
"""

from __future__ import annotations

import logging
import math
import time
from typing import TYPE_CHECKING, Literal

import anyio
import msgspec

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

__all__ = ("ENGINE", "FINAL", "Lifecycle", "State", "StateChange", "describe_error")

logger = logging.getLogger(__name__)

State = Literal["prepare", "ready", "active", "draining", "stopped", "failed"]
"""The state of a part of a run (see the module docstring)."""

ENGINE = "engine"
"""The part name of the engine itself."""

FINAL: frozenset[State] = frozenset({"stopped", "failed"})
"""The states a part does not leave."""

_NEXT: dict[State | None, frozenset[State]] = {
    None: frozenset({"prepare"}),
    "prepare": frozenset({"ready", "stopped", "failed"}),
    "ready": frozenset({"active", "draining", "stopped", "failed"}),
    "active": frozenset({"draining", "stopped", "failed"}),
    "draining": frozenset({"stopped", "failed"}),
    "stopped": frozenset(),
    "failed": frozenset(),
}


class StateChange(msgspec.Struct, frozen=True, kw_only=True):
    """One part of a run moved from one state to another.

    Attributes:
        part: The part: `engine`, a stage (`generate`, `download`, `parse`), `sinks`, `downloaders`, or a
            backend (`cluster`, `coordination`, `seen`, `gate`, `queue`).
        old: Its state before (None: the part was not known yet).
        new: Its state now.
        time: When, in seconds since the epoch.
        cause: Why, for `failed` (the part, what it is, the error) and for some others (e.g. `interrupted`).
    """

    part: str
    old: State | None
    new: State
    time: float
    cause: str | None = None


def describe_error(exc: BaseException) -> str:
    """An error in one line: its type and message (a group of one error, as task groups raise: that one).

    Example:
        >>> describe_error(ConnectionRefusedError(111, "Connection refused"))
        'ConnectionRefusedError: [Errno 111] Connection refused'
        >>> describe_error(ExceptionGroup("unhandled errors in a TaskGroup", [KeyError("x")]))
        "KeyError: 'x'"
    """
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class Lifecycle:
    """The states of the parts of one run, and who listens to their changes.

    Args:
        clock: Seconds since the epoch, for `StateChange.time`.

    Example:
        >>> life = Lifecycle()
        >>> life.move("queue", "prepare")
        >>> life.move("queue", "failed", cause="queue (redis://127.0.0.1:1/0): refused")
        >>> life.parts(), life.failure()
        ({'queue': 'failed'}, 'queue (redis://127.0.0.1:1/0): refused')
    """

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._states: dict[str, State] = {}
        self._history: list[StateChange] = []
        self._subscribers: list[MemoryObjectSendStream[StateChange]] = []
        self._closed = False

    def state(self, part: str) -> State | None:
        """The state of `part`, or None when it never was prepared."""
        return self._states.get(part)

    def parts(self) -> dict[str, State]:
        """Every part's state, in the order they were first prepared."""
        return dict(self._states)

    def failure(self) -> str | None:
        """The cause of the first part that failed, or None."""
        return next((c.cause for c in self._history if c.new == "failed"), None)

    def move(self, part: str, new: State, *, cause: str | None = None) -> None:
        """Move `part` to `new`; nothing happens when it is there already or has stopped or failed.

        Raises:
            ValueError: `new` does not follow the part's state (a step back, or `active` before `ready`).
        """
        old = self._states.get(part)
        if old == new or old in FINAL:
            return
        if new not in _NEXT[old]:
            raise ValueError(f"{part}: cannot go from {old} to {new}")
        self._states[part] = new
        change = StateChange(part=part, old=old, new=new, time=self._clock(), cause=cause)
        self._history.append(change)
        _log(change)
        for stream in list(self._subscribers):
            try:
                stream.send_nowait(change)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):  # the subscriber left
                stream.close()  # our end too: an unclosed stream warns when collected
                self._subscribers.remove(stream)
        if part == ENGINE and new in FINAL:
            self.close()

    def move_all(self, new: State, *, among: Iterable[State], cause: str | None = None) -> None:
        """Move every part but the engine whose state is one of `among` to `new`."""
        wanted = frozenset(among)
        for part, state in list(self._states.items()):
            if part != ENGINE and state in wanted:
                self.move(part, new, cause=cause)

    def subscribe(self) -> MemoryObjectReceiveStream[StateChange]:
        """A stream of every change so far, then of each new one; it ends when the run has ended."""
        send, receive = anyio.create_memory_object_stream[StateChange](math.inf)
        for change in self._history:
            send.send_nowait(change)
        if self._closed:
            send.close()
        else:
            self._subscribers.append(send)
        return receive

    def close(self) -> None:
        """End the subscribers' streams (once the engine has stopped or failed)."""
        self._closed = True
        for stream in self._subscribers:
            stream.close()
        self._subscribers.clear()


def _log(change: StateChange) -> None:
    """The engine's changes and every failure at INFO (a failure is raised as well), others at DEBUG."""
    why = f" ({change.cause})" if change.cause else ""
    level = logging.INFO if change.part == ENGINE or change.new == "failed" else logging.DEBUG
    logger.log(level, "%s %s → %s%s", change.part, change.old, change.new, why)
