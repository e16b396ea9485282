"""`SchedulerSettings`: run-wide limits and the default node policy of a `Scheduler`."""

from __future__ import annotations

from typing import Literal

import msgspec

from ._policy import NodePolicy

__all__ = ("SchedulerSettings",)


class SchedulerSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How a `Scheduler` runs graphs (durations in seconds).

    Attributes:
        max_in_flight: Node attempts running at once, across all runs of the scheduler. Nodes waiting
            for a slot, for a backoff delay or for another run's identical key hold no slot.
        on_failure: `"cancel"`: the first node that fails for good cancels every other node of the run.
            `"continue"`: only the failed node's descendants are skipped; independent branches finish.
        run_timeout: Limit of a whole run; running nodes are then cancelled and `RunTimeout` is raised.
        policy: The `NodePolicy` of nodes whose `Step` has none.

    Example:
        >>> SchedulerSettings(max_in_flight=4, on_failure="continue").max_in_flight
        4
        >>> SchedulerSettings(on_failure="ignore")
        Traceback (most recent call last):
        ...
        ValueError: on_failure must be 'cancel' or 'continue', got 'ignore'
    """

    max_in_flight: int = 64
    on_failure: Literal["cancel", "continue"] = "cancel"
    run_timeout: float | None = None
    policy: NodePolicy = NodePolicy()

    def __post_init__(self) -> None:
        if self.max_in_flight < 1:
            raise ValueError(f"max_in_flight must be >= 1, got {self.max_in_flight!r}")
        if self.on_failure not in ("cancel", "continue"):
            raise ValueError(f"on_failure must be 'cancel' or 'continue', got {self.on_failure!r}")
        if self.run_timeout is not None and self.run_timeout <= 0:
            raise ValueError(f"run_timeout must be > 0 seconds or None, got {self.run_timeout!r}")
