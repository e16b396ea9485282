"""`Engine`: one run — decides its backends, builds its stages (`Wiring`), runs and drains them.

The run and each of its long-lived parts go through `prepare → ready → active → draining → stopped` (or
`failed`, naming the part and the cause): `Engine.state`, `Engine.parts()` and `Engine.events()` show them.
"""

from __future__ import annotations

import functools
import logging
import os
import socket
from collections import Counter
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from .._errors import redact
from ..control import Hold
from ..coordination import ControlPlaneOwnership
from ..metadata import RunRecorder, open_metadata, plan_work
from ..observe import Stats, StatsSnapshot
from ..topics import run_topics
from ._activity import ActivityQueue
from ._backends import open_backends, open_part
from ._budget import page_budget
from ._end import EndCheck, StopReason
from ._failures import Failure, dead_letters_of, describe_dead_letter
from ._generation_follow import GenerationFollow
from ._job_counts import job_counts
from ._job_ops import JobOps
from ._lifecycle import ENGINE, FINAL, Lifecycle, describe_error
from ._open_work import OpenWork
from ._outcome import why_nothing_crawled
from ._plan import BackendPlan, job_name
from ._run_collector import run_collector
from ._stage_runner import Background, Progress, StageRunner, report_progress
from ._wiring import STAGES, Wiring, open_downloaders, open_writers
from .generate import check_modules, seed_once

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from anyio.streams.memory import MemoryObjectReceiveStream

    from mocra_cluster import ClusterConfig

    from ..config import Settings
    from ..control import JobRegistry
    from ..coordination import Ownership
    from ..download import Downloader
    from ..middleware import MiddlewareChain
    from ..modules import CompiledModule
    from ..sinks import DataSink
    from ._backends import Backends
    from ._budget import PageBudget
    from ._job_view import EngineJobView
    from ._lifecycle import State, StateChange
    from ._wiring import Crons, Stages
    from .parse import ItemWriter

__all__ = ("CrawlResult", "Engine", "Failure", "Progress", "describe_dead_letter")

logger = logging.getLogger(__name__)


class CrawlResult(msgspec.Struct, kw_only=True):
    """The outcome of a run.

    Attributes:
        reason: Why the run ended: `finished` (nothing left to do), `interrupted` (Ctrl-C / SIGTERM, drained),
            `max_pages` (the page budget was reached), `unavailable` (the broker or shared store did not
            answer for `crawl.outage_timeout` seconds; what this worker held comes back to the others),
            `lost` (the job's shared state vanished mid-run: a store restarted without persistence),
            `stopped` (an operator stopped the job: `JobView.stop`; drained, what is left stays queued).
        stats: Counters of this run.
        job: With `crawl.job_dir` or a shared queue: counters of the job so far, this run and the job's
            other runs, earlier or (workers of a broker) side by side (`runs`; `elapsed` is the sum of
            their crawling times). A `kill -9` of a `crawl.job_dir` run loses the counts of the work then
            in flight (which the next run does again and counts) and up to a second of crawling time; of
            a worker of a shared queue, its counts since its last save, at most its last second (its
            status, drop and per-domain counts are its own: not in the job's).
        dead_letters: Entries in the dead-letter queues at the end.
        failures: The first 1,000 of those entries (with `--job-dir`, `mocra dlq list` shows them all and
            `mocra dlq replay` sends them back).
        rejected: The first 100 URLs seeded by `start` / `generate` that could not be crawled, each with
            why (they are counted as dropped, `invalid_url`).
        nothing_crawled: Why a run that had work parsed no page (every start URL was invalid, or all its
            requests were dead-lettered); None otherwise (`mocra run` then exits 3).
    """

    reason: StopReason
    stats: StatsSnapshot
    job: StatsSnapshot | None = None
    dead_letters: int = 0
    failures: list[Failure] = []
    rejected: list[str] = []
    nothing_crawled: str | None = None

    @property
    def ok(self) -> bool:
        """True when the run finished, crawled what it had to, and nothing went to the dead-letter queue."""
        return self.reason == "finished" and self.dead_letters == 0 and self.nothing_crawled is None


class Engine:
    """Runs modules through the stages: task → generate → request queue → download → response queue → parse.

    Built by the `Mocra` builder; one engine runs once. `ownership` (a cluster's, e.g.
    `ControlPlaneOwnership`) splits cron fires by account owner and, without a job-wide gate, per-domain
    politeness by member count; None is one node (cron on the coordination store's leader). Once its
    run is wired, `view` reads and steers the job (pause, resume, stop), and `registry` lists it. With
    `reload` (the file its modules came from) it loads their new generations from that file (`--reload`).

    Example:
        >>> from mocra_core import Mocra, Spider
        >>> class Pages(Spider[dict[str, int]]):
        ...     name = "pages"
        ...     async def parse(self, response, ctx): ...
        >>> engine = Mocra.builder().spider(Pages()).build()
        >>> engine.state, engine.parts()
        ('prepare', {'engine': 'prepare'})
    """

    def __init__(
        self,
        modules: Sequence[tuple[CompiledModule, DataSink | None]],
        settings: Settings,
        chain: MiddlewareChain,
        downloaders: Mapping[str, Downloader],
        *,
        ownership: Ownership | None = None,
        cluster: ClusterConfig | None = None,
        registry: JobRegistry | None = None,
        reload: str | None = None,
    ) -> None:
        self._registry = registry
        self._reload = reload
        self._view: EngineJobView | None = None
        self._hold = Hold()  # paused: no new download or generation starts
        self._stop_asked = anyio.Event()
        self._ownership = ownership
        self._cluster = cluster
        scope = settings.crawl.scope  # a module that declares no scope of its own takes the settings'
        self._modules = {module.name: module.with_default_scope(scope) for module, _ in modules}
        self._sinks = {module.name: sink for module, sink in modules}
        self._settings = settings
        self._chain = chain
        self._extra_downloaders = dict(downloaders)
        self._stats = Stats()
        self._interrupted = anyio.Event()
        self._lifecycle = Lifecycle()
        self._lifecycle.move(ENGINE, "prepare")
        self._started = False

    @property
    def stats(self) -> Stats:
        """Live counters of this run."""
        return self._stats

    @property
    def view(self) -> EngineJobView | None:
        """The run's `JobView` of its job, once the run is wired (kept after it ends), else None."""
        return self._view

    @property
    def state(self) -> State:
        """The run's state: `prepare`, `ready`, `active`, `draining`, `stopped` or `failed`."""
        state = self._lifecycle.state(ENGINE)
        assert state is not None
        return state

    def parts(self) -> dict[str, State]:
        """The state of each part of the run (`engine`, stages, backends, sinks), in the order they began."""
        return self._lifecycle.parts()

    def events(self) -> MemoryObjectReceiveStream[StateChange]:
        """A stream of the run's state changes: those so far, then each as it happens; it ends with the run.

        Each subscriber gets its own stream (unbounded: the run never waits for it); close it when done.

        Example:
            >>> async def watch(engine: Engine) -> list[str]:
            ...     with engine.events() as events:
            ...         return [f"{change.part} {change.new}" async for change in events]
        """
        return self._lifecycle.subscribe()

    def interrupt(self) -> None:
        """Drain: take no new work, finish what is in flight (within `crawl.drain_timeout`), flush, return."""
        self._interrupted.set()
        self._hold.release()  # a paused run drains too
        if self._lifecycle.state(ENGINE) == "active":
            self._lifecycle.move(ENGINE, "draining", cause="interrupted")

    async def run(
        self,
        *,
        handle_signals: bool = False,
        progress: Callable[[Progress], Any] | None = None,
        progress_interval: float = 1.0,
    ) -> CrawlResult:
        """Crawl until nothing is left, the page budget is spent, or `interrupt` / a signal arrives.

        Raises:
            RuntimeError: the engine ran before.
            MocraError: a part failed to start (`BackendUnavailable`, `ConfigError`, …); the engine is then
                `failed`, and its cause (`StateChange.cause`) names the part: `queue (redis://…): …`.
        """
        if self._started:
            raise RuntimeError("an Engine runs once: build another (`Mocra.builder()…build()`)")
        self._started = True
        try:
            result = await self._run(handle_signals, progress, progress_interval)
        except BaseException as exc:
            self._settle(exc)
            self._ended(None)
            raise
        self._lifecycle.move(ENGINE, "stopped", cause=result.reason)
        self._ended(result)
        return result

    def _ended(self, result: CrawlResult | None) -> None:
        if self._view is not None:
            self._view.end(result)
            if self._registry is not None:
                self._registry.finished(self._view)

    def _settle(self, exc: BaseException) -> None:
        """The run ended with `exc`: the engine failed (naming the part that did), or was cancelled."""
        life = self._lifecycle
        if not isinstance(exc, Exception):
            life.move(ENGINE, "stopped", cause="cancelled")
            return
        cause = life.failure() or f"{ENGINE}: {describe_error(exc)}"
        for part in STAGES:  # stages built but never started
            if life.state(part) not in (None, *FINAL):
                life.move(part, "stopped")
        failed_in = "prepare" if life.state(ENGINE) in ("prepare", "ready") else "the run"
        life.move(ENGINE, "failed", cause=cause)
        exc.add_note(f"the run failed in {failed_in}: {cause}")

    async def _run(
        self, handle_signals: bool, progress: Callable[[Progress], Any] | None, progress_interval: float
    ) -> CrawlResult:
        settings, stats, life = self._settings, self._stats, self._lifecycle
        plan = BackendPlan.decide(
            settings, job=job_name(settings, list(self._modules)), cluster=self._cluster
        )
        async with AsyncExitStack() as stack:
            stack.enter_context(run_collector())  # the start-up heap frozen, young collections rarer
            downloaders = await open_downloaders(stack, life, self._extra_downloaders, settings)
            writers = await open_writers(stack, life, self._sinks, self._chain, stats, settings.sink)
            backends = await stack.enter_async_context(open_backends(plan, life))
            if backends.plane is not None and self._ownership is None:
                self._ownership = ControlPlaneOwnership(backends.plane)
            counts = job_counts(backends.job_dir, backends.coordination, stats, shared=plan.shared)
            if counts is not None:
                await counts.start()  # a job dir: its earlier runs' counts, before the page budget
            budget = page_budget(
                settings.crawl.max_pages,
                backends.coordination,
                shared=plan.shared,
                used=stats.earlier.requests,
            )
            open_work = OpenWork()
            queue = ActivityQueue(
                backends.queue,
                open_work=open_work,
                settled=None if counts is None else counts.settled,  # after every ack
                dead_lettered=stats.dead_letter,
                max_attempts=settings.queue.max_attempts,
            )
            recorder = await self._plan_work(stack, settings.store.url, job=plan.job)
            where = f"job dir {plan.job_dir}" if plan.job_dir is not None else f"job {plan.job!r}"
            gens = await check_modules(self._modules, backends.coordination, where, shared=plan.shared)
            stages, end, crons = await self._wire(
                stack, backends, queue, downloaders, writers, budget, recorder, gens
            )
            assert stages.modules is not None
            follow = GenerationFollow(
                stages.modules, open_work, backends.coordination, job=where, scope=settings.crawl.scope,
                reload=self._reload, shared=plan.shared,
            )  # fmt: skip
            await follow.start()
            topics = run_topics(self._modules)
            report = (
                None
                if progress is None
                else functools.partial(
                    report_progress, queue, topics, stats, stages.outage, progress, progress_interval
                )
            )
            ops = await JobOps.open(
                backends, queue, stats, self._hold, topics=topics, state=lambda: self.state,
                on_stop=self._stop_asked.set, proxies=stages.proxies, generations=stages.modules.loaded,
                source=self._reload,
            )  # fmt: skip
            stack.push_async_callback(ops.view.detach)  # before the backends close
            self._view = ops.view
            if self._registry is not None:
                self._registry.add(ops.view)
            unique_writers = list({id(writer): writer for writer in writers.values()}.values())
            tasks = (*ops.tasks, follow.run)
            background = Background(unique_writers, crons, counts, report, tasks, self._hold)
            life.move(ENGINE, "ready", cause=plan.describe())
            runner = StageRunner(stages, life, settings.crawl, interrupt=self.interrupt)
            reason = await runner.run(end, background, handle_signals=handle_signals)
            if recorder is not None:
                await recorder.finished(reason, stats)
            failures, dead = (
                ([], 0) if reason in ("unavailable", "lost") else await dead_letters_of(queue, topics)
            )
            snapshot = stats.snapshot()
            so_far = None if counts is None else await counts.finish()
        logger.info("run %s: %s", reason, snapshot.to_dict())
        rejected = stages.generate.rejected
        return CrawlResult(
            reason=reason,
            stats=snapshot,
            job=so_far,
            dead_letters=dead,
            failures=failures,
            rejected=rejected,
            nothing_crawled=why_nothing_crawled(snapshot, parsed=stages.parse.parsed, rejected=rejected)
            if reason in ("finished", "max_pages")
            else None,
        )

    async def _plan_work(self, stack: AsyncExitStack, store: str | None, *, job: str) -> RunRecorder | None:
        """Give the modules their work from the metadata source (the code, or `store`), once per run.

        Returns where the runs' records go (a store's), or None.
        """
        opening = open_metadata(store, self._modules.values())
        if store is not None:
            opening = open_part(self._lifecycle, "store", redact(store), opening)
        source, log = await stack.enter_async_context(opening)
        self._modules = (await plan_work(self._modules, source)).modules
        if log is None:
            return None
        self._stats.pages_by_run = Counter()
        return RunRecorder(log, self._modules, job=job, worker=f"{socket.gethostname()}:{os.getpid()}")

    async def _wire(
        self,
        stack: AsyncExitStack,
        backends: Backends,
        queue: ActivityQueue,
        downloaders: Mapping[str, Downloader],
        writers: Mapping[str, ItemWriter],
        budget: PageBudget | None,
        recorder: RunRecorder | None,
        generations: Mapping[str, int],
    ) -> tuple[Stages, EndCheck, Crons]:
        """Build the stages, seed the job (once), the end check and the cron schedules."""
        life = self._lifecycle
        for part in STAGES:
            life.move(part, "prepare")
        settings, owners, hold = self._settings, self._ownership, self._hold
        wiring = Wiring(
            self._modules, settings, self._chain, self._stats,
            ownership=owners, hold=hold, generations=generations,
        )  # fmt: skip
        stages = await wiring.stages(stack, backends, queue, downloaders, writers, budget)
        for part in STAGES:
            life.move(part, "ready")
        holder = f"{os.getpid()}:{id(self)}"
        seeded_by = None if recorder is None else recorder.started
        seeded = await seed_once(
            self._modules, stages.router, backends.coordination, holder=holder, seeded=seeded_by
        )
        crons = wiring.crons(stages.router, backends.coordination, seeded=seeded_by)
        end = EndCheck(
            queue,
            backends.coordination,
            shared=backends.plan.shared,
            modules=self._modules,
            budget=budget,
            interrupted=self._interrupted,
            stopped=self._stop_asked,
            crons_running=lambda: crons.running,
            outage=stages.outage,
            seeded=seeded,
        )
        return stages, end, crons
