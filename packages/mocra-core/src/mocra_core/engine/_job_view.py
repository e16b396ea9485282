"""`EngineJobView`: the `JobView` an engine makes of its run — whole-job reads through the job's shared state.

Counts come from the job's coordination store on a shared job (what every worker saved, `SharedCounts`;
at most a second old) and from the run's `Stats` on one process (with a job dir's earlier runs); queue
depths and dead letters from the queue (a broker's, as every worker sees it); workers from their
heartbeats (`WorkerRegistry`); cluster nodes from the control plane. So any worker's view of a job
answers the same. Once the run has ended the view keeps answering with its last state (`end`).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from ..control import ClusterNode, ControlState, FailureView, JobEnded, JobSnapshot, QueueDepth
from ..observe import StatsSnapshot
from ..topics import stage_of
from ._failures import describe_dead_letter
from ._job_counts import read_shared_counts
from ._transient import TRANSIENT

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from mocra_cluster import ControlPlane

    from ..control import JobControl, WorkerRegistry
    from ..coordination import Coordination
    from ..download import ProxyRoute
    from ..observe import Stats
    from ._activity import ActivityQueue
    from ._engine import CrawlResult
    from ._failures import Failure

__all__ = ("DEAD_COUNTED", "EngineJobView", "cluster_nodes")

logger = logging.getLogger(__name__)

DEAD_COUNTED = 1_000
"""Dead letters counted at most per topic in a snapshot (`QueueDepth.dead`)."""
_DEAD_FRESH = 2.0  # seconds a count of dead letters is reused (reading them decodes each)
_T = TypeVar("_T")
_STAGES = ("task", "request", "response")
_LAST_LOOK = 2.0  # seconds the view may take to note the queues' depths as the run ends
_UNREACHABLE: tuple[type[Exception], ...] = (*TRANSIENT, TimeoutError, anyio.ClosedResourceError)


class EngineJobView:
    """One run's view of its job (`mocra_core.control.JobView`), made by `Engine` when its run is wired.

    Args:
        job: The job's name.
        state: The engine's lifecycle state, now.
        stats: The run's counters.
        queue: The run's queue.
        topics: The job's topics.
        coordination: The job's coordination store.
        control: The job's control keys (this run's `Hold` behind them).
        workers: The job's heartbeats.
        shared: Whether the job's counts are in `coordination` (workers share it).
        plane: The cluster's control plane, or None.
        proxies: The run's proxy route, whose pools' counts `proxy_pools` shows, or None.
        source: The file the run loads new generations of its modules from (`--reload`), or None.
    """

    def __init__(
        self,
        job: str,
        *,
        state: Callable[[], str],
        stats: Stats,
        queue: ActivityQueue,
        topics: Sequence[str],
        coordination: Coordination,
        control: JobControl,
        workers: WorkerRegistry,
        shared: bool,
        plane: ControlPlane | None = None,
        proxies: ProxyRoute | None = None,
        source: str | None = None,
    ) -> None:
        self._job = job
        self._source = source
        self._proxies = proxies
        self._state = state
        self._stats = stats
        self._queue: ActivityQueue | None = queue
        self._topics = tuple(topics)
        self._coordination = coordination
        self._control = control
        self._workers = workers
        self._shared = shared
        self._plane = plane
        self._dead: dict[str, int] = {}
        self._dead_at = -float("inf")
        self._final_queues: dict[str, QueueDepth] = {}
        self._ended: CrawlResult | None = None
        self._end_reason: str | None = None

    @property
    def job(self) -> str:
        """The job's name."""
        return self._job

    @property
    def stats(self) -> Stats:
        """This worker's live counters of its run."""
        return self._stats

    def proxy_pools(self) -> dict[str, Any]:
        """Each proxy pool's counts now (`mocra_proxy.PoolStats`), by name (pools without `stats()`: none)."""
        if self._proxies is None:
            return {}
        return {
            name: pool.leaser.stats()  # type: ignore[attr-defined]  # checked just below
            for name, pool in self._proxies.pools.items()
            if callable(getattr(pool.leaser, "stats", None))
        }

    @property
    def ended(self) -> str | None:
        """Why the run ended (`CrawlResult.reason`, or `failed`), or None while it runs."""
        return self._end_reason

    async def snapshot(self) -> JobSnapshot:
        """The job now (after its run here: as it ended)."""
        if self._end_reason is not None:
            return self._final()
        run = self._stats.snapshot()
        snapshot = JobSnapshot(
            job=self._job,
            state=self._state(),
            control=await self._quietly(self._control.state(), "running"),
            stats=await self._quietly(self._job_counts(), run),
            run=run,
            queues=await self._quietly(self._queues(), {}),
            workers=await self._quietly(self._workers.live(), []),
            cluster=await self._quietly(cluster_nodes(self._plane), []),
            time=time.time(),
        )
        return snapshot

    async def dead_letters(self, topic: str | None = None, *, limit: int = 100) -> Sequence[FailureView]:
        """Up to `limit` dead letters of `topic` (every topic of the job when None), oldest first."""
        if self._queue is None:
            failures = [] if self._ended is None else self._ended.failures
            chosen = [f for f in failures if topic is None or f.topic == topic][:limit]
            return [_view(f) for f in chosen]
        found: list[FailureView] = []
        for name in self._topics if topic is None else (topic,):
            for letter in await self._queue.dead_letters(name, limit=limit - len(found)):
                found.append(_view(describe_dead_letter(letter)))
            if len(found) >= limit:
                break
        return found

    async def replay(self, topics: Sequence[str] | None = None) -> int:
        """Send the dead letters of `topics` back (stage names `task`/`request`/`response`, or topics).

        Raises:
            JobEnded: the run has ended here.
        """
        queue = self._running_queue()
        chosen = [t for t in self._topics if topics is None or t in topics or stage_of(t) in topics]
        chosen += [t for t in topics or () if t not in self._topics and t not in _STAGES]  # not recorded
        moved = 0
        for topic in chosen:
            moved += await queue.replay(topic)
        self._dead_at = -float("inf")
        return moved

    async def control(self) -> ControlState:
        """What the operator asked of the job."""
        if self._end_reason is not None:
            return "stopping" if self._control.stopping else "running"
        return await self._control.state()

    async def pause(self) -> ControlState:
        """Hold the job on every worker. Raises `JobEnded` once the run has ended here."""
        self._running_queue()
        return await self._control.pause()

    async def resume(self) -> ControlState:
        """Let the job go on. Raises `JobEnded` once the run has ended here."""
        self._running_queue()
        return await self._control.resume()

    async def stop(self) -> ControlState:
        """Stop the job on every worker. Raises `JobEnded` once the run has ended here."""
        self._running_queue()
        return await self._control.stop()

    def deploy_target(self) -> tuple[Coordination, str | None]:
        """The job's coordination store (its generations) and this run's own file (`--reload`), or None.

        What `POST /api/v1/jobs/{job}/deploy` deploys: only ever the file the run was started with.

        Raises:
            JobEnded: the run has ended here.
        """
        self._running_queue()
        return self._coordination, self._source

    async def detach(self) -> None:
        """The run's backends are about to close: note the queues' depths (2 s at most), then read no more."""
        with anyio.move_on_after(_LAST_LOOK):
            self._final_queues = await self._quietly(self._queues(fresh=True), self._final_queues)
        self._queue = None
        if self._end_reason is None:
            self._end_reason = "stopped"

    def end(self, result: CrawlResult | None) -> None:
        """The run ended with `result` (None: it failed); the view answers with it from now on."""
        self._queue = None
        self._ended = result
        self._end_reason = "failed" if result is None else result.reason

    def _running_queue(self) -> ActivityQueue:
        if self._queue is None:
            raise JobEnded(self._job, self._end_reason or "stopped")
        return self._queue

    async def _job_counts(self) -> StatsSnapshot:
        if self._shared:
            saved = await read_shared_counts(self._coordination)
            return saved if saved is not None else StatsSnapshot(runs=0)
        return self._stats.job_snapshot()

    async def _queues(self, *, fresh: bool = False) -> dict[str, QueueDepth]:
        queue = self._running_queue()
        if fresh or time.monotonic() - self._dead_at > _DEAD_FRESH:
            self._dead = {t: len(await queue.dead_letters(t, limit=DEAD_COUNTED)) for t in self._topics}
            self._dead_at = time.monotonic()
        return {
            topic: QueueDepth(pending=await queue.pending(topic), dead=self._dead.get(topic, 0))
            for topic in self._topics
        }

    async def _quietly(self, reading: Awaitable[_T], fallback: _T) -> _T:
        """Await `reading`; on a backend out of reach (or closed), log and return `fallback`."""
        try:
            return await reading
        except _UNREACHABLE as exc:
            logger.debug("job %s: a part of its snapshot is out of reach: %s", self._job, exc)
            return fallback

    def _final(self) -> JobSnapshot:
        result = self._ended
        run = result.stats if result is not None else self._stats.snapshot()
        return JobSnapshot(
            job=self._job,
            state=self._state(),
            control="stopping" if self._control.stopping else "running",
            stats=(result.job or result.stats) if result is not None else run,
            run=run,
            queues=dict(self._final_queues),
            workers=[],
            cluster=[],
            time=time.time(),
        )


def _view(failure: Failure) -> FailureView:
    return FailureView(
        topic=failure.topic, id=failure.id, url=failure.url, attempt=failure.attempt, reason=failure.reason
    )


async def cluster_nodes(plane: ControlPlane | None) -> list[ClusterNode]:
    """The live members of a cluster's control plane: role, term, last heartbeat, partitions; [] without."""
    if plane is None:
        return []
    from mocra_cluster import owned_partitions

    status = await plane.status()
    members = await plane.live_members()
    ids = [member.member_id for member in members]
    return [
        ClusterNode(
            id=member.member_id,
            role="leader" if member.member_id == status.leader else "follower",
            term=status.term,
            heartbeat=member.seen,
            partitions=owned_partitions(member.member_id, ids),
        )
        for member in members
    ]
