"""`JobView`: what the admin API, the dashboard and the metrics read of a job, and how they steer it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..observe import Stats
    from ._snapshot import ControlState, FailureView, JobSnapshot

__all__ = ("JobView",)


class JobView(Protocol):
    """One job as an operator sees it through any of its workers (reads go through the job's shared state).

    Reads are whole-job: counts, queue depths, dead letters and workers come from the job's coordination
    store and queues, so every worker's API answers the same. Writes (`pause`, `resume`, `stop`, `replay`)
    act on the whole job too: every worker of the job follows within about a second.
    """

    @property
    def job(self) -> str:
        """The job's name."""
        ...

    @property
    def stats(self) -> Stats:
        """The answering worker's live counters (latency histogram and all), for `/metrics`."""
        ...

    async def snapshot(self) -> JobSnapshot:
        """The job now."""
        ...

    async def dead_letters(self, topic: str | None = None, *, limit: int = 100) -> Sequence[FailureView]:
        """Up to `limit` dead letters of `topic` (every stage queue when `None`), oldest first."""
        ...

    async def replay(self, topics: Sequence[str] | None = None) -> int:
        """Put the dead letters of `topics` (all when `None`) back in their queues; how many went back."""
        ...

    async def control(self) -> ControlState:
        """What the operator asked of the job."""
        ...

    async def pause(self) -> ControlState:
        """Hold the job: no new download or generation starts on any worker; in-flight work ends."""
        ...

    async def resume(self) -> ControlState:
        """Let a paused job go on."""
        ...

    async def stop(self) -> ControlState:
        """Stop the job: every worker drains (in-flight work ends, sinks flush) and its run returns."""
        ...
