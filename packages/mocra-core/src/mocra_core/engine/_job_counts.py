"""`JobCounts`: where a job keeps its counts (all its runs, all its workers), and what a kill can lose.

A run counts what it does in its `Stats`; a job, run again after a stop or run by many workers at once,
keeps the sum somewhere the runs share. Two places, one protocol:

- `JobDirCounts`, a `--job-dir` job (one process at a time): the job's counts in the job dir's LMDB,
  saved after every ack (`settled`), so a `kill -9` loses only the counts of the work then in flight
  (which the next run does again and counts) and up to a second of crawl time.
- `SharedCounts`, a job whose workers share a broker (or a cluster): counters in the job's coordination
  store, to which each worker adds what it did since its last save once a second (`SAVE_INTERVAL`) and
  at the end of its run, one `incr` per counter that changed, never a round trip per page. A worker
  killed with `kill -9` loses the counts since its last save: at most its last second of work.

A job's crawl time (`StatsSnapshot.elapsed`) is the sum of its runs' times: with workers side by side,
worker-seconds, not the wall time.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol

import anyio
import msgspec

from ..observe import StatsSnapshot
from ._plan import BackendPlan
from ._transient import TRANSIENT

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..config import Settings
    from ..coordination import Coordination
    from ..observe import Stats
    from ._jobdir import JobDir

__all__ = (
    "COUNTER_KEYS",
    "SAVE_INTERVAL",
    "JobCounts",
    "JobDirCounts",
    "SharedCounts",
    "job_counts",
    "read_job_counts",
    "read_shared_counts",
    "save_every",
)

logger = logging.getLogger(__name__)

SAVE_INTERVAL = 1.0
"""Seconds between two saves of a run's counts to its job's (a kill loses at most this much of them)."""
_SAVE_TIMEOUT = 5.0  # seconds a save may take before the run gives up on it (a store out of reach)

_OUT_OF_REACH: tuple[type[Exception], ...] = (TimeoutError, *TRANSIENT)
_FIELDS = ("requests", "responses", "items", "retries", "dead_lettered", "errors", "bytes")
_ELAPSED = "stats/elapsed_ms"
_RUNS = "stats/runs"
COUNTER_KEYS = (*(f"stats/{field}" for field in _FIELDS), _ELAPSED, _RUNS)
"""The coordination counters of a shared job's counts: the `StatsSnapshot` fields, crawl time, runs."""


class JobCounts(Protocol):
    """Where a job keeps its counts: a run adds its own to them, and reads the job's so far at its end."""

    @property
    def settled(self) -> Callable[[], None] | None:
        """Called after every ack, nack and dead-letter (see `ActivityQueue`); None when nothing is to do."""
        ...

    async def start(self) -> None:
        """Begin counting this run as one of the job's (a job dir: carry on from its earlier runs)."""
        ...

    async def save(self) -> None:
        """Add this run's counts to the job's (called every `SAVE_INTERVAL` seconds)."""
        ...

    async def ended(self) -> None:
        """The job was found finished: save now, while its other workers are still up; never raises.

        On a cluster this matters: the last node to stop has no majority left, so what it did is in the
        job's store only if saved now (`finish` then adds the rest to the counts it reports).
        """
        ...

    async def finish(self) -> StatsSnapshot | None:
        """Save for the last time and return the job's counts so far; None when they are out of reach."""
        ...


class JobDirCounts:
    """The counts of a `--job-dir` job, in its LMDB: this run's plus its earlier runs' (`Stats.resume`)."""

    def __init__(self, job: JobDir, stats: Stats) -> None:
        self._job = job
        self._stats = stats
        self._settled = job.counts_saver(stats)

    @property
    def settled(self) -> Callable[[], None]:
        """Saves the job's counts but the per-domain ones (a cheap LMDB write) after every ack."""
        return self._settled

    async def start(self) -> None:
        previous = self._job.load_stats()
        if previous is not None:
            self._stats.resume(previous)
            logger.info("resuming job in %s", self._job.path)

    async def save(self) -> None:
        self._job.save_stats(self._stats.job_snapshot())

    async def ended(self) -> None:
        pass  # saved after every ack already, and by `finish`

    async def finish(self) -> StatsSnapshot:
        so_far = self._stats.job_snapshot()
        self._job.save_stats(so_far)
        return so_far


class SharedCounts:
    """The counts of a job whose workers share it: counters in its coordination store (`COUNTER_KEYS`).

    Each `save` adds what the run counted since the one before, with one `incr` per counter that
    changed; a counter whose `incr` raised is added with the next save. The run is counted in `runs`
    at its first save. Status codes, drop reasons and per-domain counts stay the run's own.

    Example:
        >>> import anyio
        >>> from mocra_core.coordination import LocalCoordination
        >>> from mocra_core.observe import Stats
        >>> async def two_workers() -> tuple[int, int]:
        ...     async with LocalCoordination() as store:
        ...         a, b = Stats(), Stats()
        ...         a.responses, b.responses = 3, 4
        ...         await SharedCounts(store, a).save()
        ...         job = await SharedCounts(store, b).finish()
        ...         assert job is not None
        ...         return job.runs, job.responses
        >>> anyio.run(two_workers)
        (2, 7)
    """

    def __init__(self, coordination: Coordination, stats: Stats) -> None:
        self._coordination = coordination
        self._stats = stats
        self._saved = dict.fromkeys(COUNTER_KEYS, 0)  # what this run added to each counter so far

    @property
    def settled(self) -> None:
        """Nothing is done per ack (the counts are saved once a second)."""
        return None

    async def start(self) -> None:
        pass  # the run joins `runs` at its first save: a run killed before that left no counts

    def _totals(self) -> dict[str, int]:
        stats = self._stats
        totals = {f"stats/{field}": getattr(stats, field) for field in _FIELDS}
        totals[_ELAPSED] = round(stats.elapsed * 1000)
        totals[_RUNS] = 1
        return totals

    async def save(self) -> None:
        for key, total in self._totals().items():
            delta = total - self._saved[key]
            if delta:
                await self._coordination.incr(key, delta)
                self._saved[key] = total

    async def ended(self) -> None:
        with anyio.move_on_after(_SAVE_TIMEOUT, shield=True):  # cut mid-`incr`, a count could be added twice
            try:
                await self.save()
            except TRANSIENT as exc:
                logger.debug(
                    "saving the job's counts at its end failed, once more when the run ends: %s", exc
                )

    async def finish(self) -> StatsSnapshot | None:
        """Save for the last time and return the job's counts, this run's included.

        A store that takes reads but not writes (the last node of a cluster to stop has no majority
        left) still gives the job's counts: this run's unsaved part is added to them here, and is missing
        from the store (logged).
        """
        refused: Exception | None = None
        try:
            with anyio.fail_after(_SAVE_TIMEOUT):
                await self.save()
        except _OUT_OF_REACH as exc:
            refused = exc
        unsaved = {key: total - self._saved[key] for key, total in self._totals().items()}
        try:
            with anyio.fail_after(_SAVE_TIMEOUT):
                so_far = await read_shared_counts(self._coordination)
        except _OUT_OF_REACH as exc:
            logger.warning("the job's counts are out of reach, this run's are not in them: %s", exc)
            return None
        if refused is None or not any(unsaved.values()):
            return so_far
        logger.info("the job's store took no more writes, this run's last counts are not in it: %s", refused)
        return _plus(so_far, unsaved)


def _plus(saved: StatsSnapshot | None, unsaved: dict[str, int]) -> StatsSnapshot:
    """The job's counts as saved (None: none yet) with a run's unsaved deltas (`COUNTER_KEYS`) added."""
    base = saved or StatsSnapshot()
    fields = {field: getattr(base, field) + unsaved[f"stats/{field}"] for field in _FIELDS}
    return msgspec.structs.replace(
        base, **fields, elapsed=base.elapsed + unsaved[_ELAPSED] / 1000, runs=base.runs + unsaved[_RUNS]
    )


async def read_shared_counts(coordination: Coordination) -> StatsSnapshot | None:
    """The counts of a shared job so far, as its workers saved them; None before any saved (`SharedCounts`).

    Raises:
        CoordinationError: the store failed, or a counter holds something else.
    """
    values = {key: await coordination.get(key) for key in COUNTER_KEYS}
    if values[_RUNS] is None:
        return None
    counts = {key.removeprefix("stats/"): int(value or 0) for key, value in values.items()}
    return StatsSnapshot(
        requests=counts["requests"],
        responses=counts["responses"],
        items=counts["items"],
        retries=counts["retries"],
        dead_lettered=counts["dead_lettered"],
        errors=counts["errors"],
        bytes=counts["bytes"],
        elapsed=counts["elapsed_ms"] / 1000,
        runs=counts["runs"],
    )


async def read_job_counts(settings: Settings, job: str) -> StatsSnapshot | None:
    """The counts of a job whose workers share the queue of `settings`, from its coordination store.

    What `mocra status --queue URL --job NAME` shows; None before a worker of the job saved any.

    Raises:
        ConfigError: the settings name no shared coordination store (a NATS or Kafka queue needs
            `coordination.url`).
        CoordinationError: the store failed.

    Example:
        >>> import anyio
        >>> from mocra_core.config import Settings
        >>> nats = {"queue": {"url": "nats://127.0.0.1:4222"}, "coordination": {"url": "memory://"}}
        >>> print(anyio.run(read_job_counts, Settings.from_mapping(nats), "books"))
        None
    """
    plan = BackendPlan.decide(settings, job=job, read_only=True)
    async with plan.make_coordination() as coordination:
        return await read_shared_counts(coordination)


def job_counts(
    job: JobDir | None, coordination: Coordination, stats: Stats, *, shared: bool
) -> JobCounts | None:
    """Where the job of a run keeps its counts.

    Its coordination store when workers share it (a broker, a cluster), else its job dir; None for a run
    that is the whole job (neither).
    """
    if shared:
        return SharedCounts(coordination, stats)
    if job is not None:
        return JobDirCounts(job, stats)
    return None


async def save_every(counts: JobCounts, interval: float = SAVE_INTERVAL) -> None:
    """Save `counts` every `interval` seconds until cancelled; a save is not cut short by the cancellation.

    A save that fails (the store out of reach) is logged; what it missed goes with the next one.
    """
    while True:
        await anyio.sleep(interval)
        with anyio.move_on_after(_SAVE_TIMEOUT, shield=True):  # cut mid-`incr`, a count could be added twice
            try:
                await counts.save()
            except TRANSIENT as exc:
                logger.debug("saving the job's counts failed, next time: %s", exc)
