"""`Engine`: the composition root of one run — builds the stages and runs them until `EndCheck` ends it."""

from __future__ import annotations

import logging
import os
import signal
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from ..coordination import ControlPlaneOwnership
from ..download import DomainLimiter, GatedLimiter, HttpxDownloader, RetryPolicy, RobotsPolicy, ShareLimiter
from ..http import Request, Response
from ..modules import Task
from ..observe import Stats, StatsSnapshot
from ..schedule import CronRunner, CronSchedule
from ._activity import ActivityQueue
from ._backends import (
    check_backends,
    is_shared,
    job_name,
    open_coordination,
    open_gate,
    open_queue_for,
    open_seen,
)
from ._budget import page_budget
from ._cluster import open_cluster
from ._cron_claims import CronClaims
from ._download import DownloadStage, Politeness
from ._end import TOPICS, EndCheck, StopReason
from ._frontier import Frontier
from ._generate import GenerateStage
from ._items import ItemWriter
from ._job_counts import job_counts, save_every
from ._jobdir import JobDir
from ._login import LoginManager
from ._outage import Outage
from ._outcome import why_nothing_crawled
from ._parse import ParseStage
from ._router import Router
from ._runbook import RunBook
from ._seeding import check_modules, seed_once, start_tasks
from ._transient import TRANSIENT
from ._unparsed import UnparsedMarks

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from mocra_cluster import ClusterConfig

    from ..config import Settings
    from ..coordination import Coordination, Ownership
    from ..download import Downloader
    from ..middleware import MiddlewareChain
    from ..modules import CompiledModule
    from ..queue import DeadLetter
    from ..sinks import DataSink
    from ._job_counts import JobCounts

__all__ = ("CrawlResult", "Engine", "Failure", "Progress", "describe_dead_letter")

logger = logging.getLogger(__name__)


class Progress(msgspec.Struct, kw_only=True):
    """What a progress display shows: the stats so far and the depth of each queue."""

    stats: StatsSnapshot
    queued: dict[str, int]


class Failure(msgspec.Struct, kw_only=True):
    """One entry of a dead-letter queue, described for people.

    Attributes:
        topic: The stage queue it failed in: `task`, `request` (download) or `response` (parse).
        id: The message id (for `replay`).
        url: The URL of the request or response, or the module/node of a task.
        attempt: Attempts made.
        reason: Why it gave up: status or error of the last attempt, or the parse traceback.
    """

    topic: str
    id: str
    url: str
    attempt: int
    reason: str


def describe_dead_letter(letter: DeadLetter) -> Failure:
    """Turn a dead letter into a `Failure`."""
    payload = letter.payload
    if isinstance(payload, Request | Response):
        where = payload.url
    elif isinstance(payload, Task):
        where = f"task {payload.module}/{payload.node}"
    else:
        where = f"<undecodable {type(payload).__name__}>"
    return Failure(topic=letter.topic, id=letter.id, url=where, attempt=letter.attempt, reason=letter.reason)


class CrawlResult(msgspec.Struct, kw_only=True):
    """The outcome of a run.

    Attributes:
        reason: Why the run ended: `finished` (nothing left to do), `interrupted` (Ctrl-C / SIGTERM, drained),
            `max_pages` (the page budget was reached), `unavailable` (the broker or shared store did not
            answer for `crawl.outage_timeout` seconds; what this worker held comes back to the others),
            `lost` (the job's shared state vanished mid-run: a store restarted without persistence).
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
    politeness by member count; None is one node (cron on the coordination store's leader).
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
    ) -> None:
        self._ownership = ownership
        self._cluster = cluster
        self._modules = {module.name: module for module, _ in modules}
        self._sinks = {module.name: sink for module, sink in modules}
        self._settings = settings
        self._chain = chain
        self._extra_downloaders = dict(downloaders)
        self._stats = Stats()
        self._interrupted = anyio.Event()
        self._queue: ActivityQueue | None = None
        self._outage: Outage | None = None  # while running
        self._crons_running = 0

    @property
    def stats(self) -> Stats:
        """Live counters of this run."""
        return self._stats

    def interrupt(self) -> None:
        """Stop taking new work, finish what is in flight, flush sinks and return (as on Ctrl-C)."""
        self._interrupted.set()

    async def run(
        self,
        *,
        handle_signals: bool = False,
        progress: Callable[[Progress], Any] | None = None,
        progress_interval: float = 1.0,
    ) -> CrawlResult:
        """Crawl until nothing is left, the page budget is spent, or `interrupt` / a signal arrives."""
        settings = self._settings
        check_backends(settings, cluster=self._cluster is not None)
        job = JobDir(settings.crawl.job_dir) if settings.crawl.job_dir else None
        async with AsyncExitStack() as stack:
            if job is not None:
                stack.callback(job.close)
            name = job_name(settings, list(self._modules))
            # a cluster: this node's Raft plane holds the job's state (coordination, seen set, ownership)
            plane = (
                None
                if self._cluster is None
                else await stack.enter_async_context(open_cluster(self._cluster))
            )
            if plane is not None and self._ownership is None:
                self._ownership = ControlPlaneOwnership(plane)
            coordination = await stack.enter_async_context(
                open_coordination(settings, job, name, plane=plane)
            )
            counts = job_counts(
                job, coordination, self._stats, shared=is_shared(settings) or plane is not None
            )
            if counts is not None:
                await counts.start()  # a job dir: its earlier runs' counts, before the page budget
            seen = (
                await stack.enter_async_context(open_seen(settings, job, coordination, name, plane=plane))
                if settings.crawl.dedup
                else None
            )
            budget = page_budget(
                settings.crawl.max_pages,
                coordination,
                shared=is_shared(settings) or plane is not None,
                used=self._stats.earlier.requests,
            )
            downloaders = await self._open_downloaders(stack)
            writers = await self._open_writers(stack)
            # the queue opens once all else is up: a run failing at start leaves no streams on a broker
            settled = None if counts is None else counts.settled  # after every ack
            queue = await stack.enter_async_context(
                ActivityQueue(
                    open_queue_for(settings, job, name),
                    settled=settled,
                    dead_lettered=self._stats.dead_letter,
                    max_attempts=settings.queue.max_attempts,
                )
            )
            self._queue = queue
            where = f"job dir {job.path}" if job is not None else f"job {name!r}"
            await check_modules(self._modules, coordination, where)  # records them at the job's first run
            frontier = Frontier(queue, seen, self._stats, max_depth=settings.crawl.max_depth)
            affinity = (
                self._ownership.partition_key if self._ownership and settings.crawl.account_affinity else None
            )
            router = Router(
                queue, self._modules, frontier, RunBook(coordination), self._stats, affinity=affinity
            )
            robots = (
                RobotsPolicy(downloaders["default"], user_agent=settings.download.user_agent)
                if settings.crawl.obey_robots
                else None
            )
            local = DomainLimiter(
                concurrency=settings.crawl.per_domain_concurrency,
                delay=settings.crawl.per_domain_delay,
                max_backoff=settings.retry.max_domain_backoff,
            )
            # job-wide politeness for the workers of a shared queue (a cluster: each node's share instead)
            gate = open_gate(settings, job, name, cluster=plane is not None)
            limiter = (
                share_limits(local, self._ownership)  # a cluster without a gate: this node's share
                if gate is None
                else await stack.enter_async_context(
                    GatedLimiter(local, await stack.enter_async_context(gate))
                )
            )
            unparsed = UnparsedMarks(coordination) if settings.crawl.direct_parse else None
            outage = self._outage = Outage(settings.crawl.outage_timeout)
            parse = ParseStage(queue, router, writers, self._chain, self._stats, unparsed, outage)
            stages = _Stages(
                generate=GenerateStage(queue, router, writers, self._stats, outage),
                download=DownloadStage(
                    queue,
                    router,
                    LoginManager(downloaders),
                    Politeness(limiter=limiter, retry=RetryPolicy(settings.retry), robots=robots),
                    self._chain,
                    self._stats,
                    budget=budget,
                    direct=parse.hand if unparsed is not None else None,
                    unparsed=unparsed,
                    outage=outage,
                ),
                parse=parse,
            )
            seeded = await seed_once(self._modules, router, coordination, holder=f"{os.getpid()}:{id(self)}")
            crons = [self._cron_runner(module, router, coordination) for module in self._cron_modules()]
            end = EndCheck(
                queue,
                coordination,
                shared=is_shared(settings),
                modules=self._modules,
                budget=budget,
                interrupted=self._interrupted,
                crons_running=lambda: self._crons_running,
                outage=outage,
                seeded=seeded,
            )
            reason = await self._run_stages(
                stages, end, crons, writers, counts, handle_signals, progress, progress_interval
            )
            failures, dead = ([], 0) if reason in ("unavailable", "lost") else await _dead_letters(queue)
            snapshot = self._stats.snapshot()
            so_far = None if counts is None else await counts.finish()
        logger.info("run %s: %s", reason, snapshot.to_dict())
        return CrawlResult(
            reason=reason,
            stats=snapshot,
            job=so_far,
            dead_letters=dead,
            failures=failures,
            rejected=stages.generate.rejected,
            nothing_crawled=why_nothing_crawled(
                snapshot, parsed=stages.parse.parsed, rejected=stages.generate.rejected
            )
            if reason in ("finished", "max_pages")
            else None,
        )

    async def _run_stages(
        self,
        stages: _Stages,
        end: EndCheck,
        crons: list[CronRunner],
        writers: Mapping[str, ItemWriter],
        counts: JobCounts | None,
        handle_signals: bool,
        progress: Callable[[Progress], Any] | None,
        progress_interval: float,
    ) -> StopReason:
        crawl = self._settings.crawl
        generate, download, parse = stages.generate, stages.download, stages.parse
        reason: StopReason = "interrupted"  # a second signal cancels everything before a reason is known
        async with anyio.create_task_group() as outer:
            unique_writers = {id(w): w for w in writers.values()}.values()
            for writer in unique_writers:
                outer.start_soon(writer.run, name="sink-writer")
            async with anyio.create_task_group() as watchers:
                if handle_signals:
                    watchers.start_soon(self._watch_signals, outer.cancel_scope)
                if progress is not None:
                    watchers.start_soon(self._report, progress, progress_interval)
                if counts is not None:
                    watchers.start_soon(save_every, counts)
                for cron in crons:
                    watchers.start_soon(self._run_cron, cron)
                async with anyio.create_task_group() as parsing:
                    parsing.start_soon(parse.run, crawl.parse_workers)
                    async with anyio.create_task_group() as fetching:
                        fetching.start_soon(generate.run)
                        fetching.start_soon(download.run, crawl.concurrency)
                        reason = await end.until_over()
                        if reason == "finished" and counts is not None:
                            await counts.ended()  # while the job's other workers are still up
                        if reason in ("unavailable", "lost"):  # what is in hand cannot be finished
                            parsing.cancel_scope.cancel(f"shared services {reason}")
                        elif reason == "finished":  # stop leasing at once; what is in hand is finished
                            generate.halt()
                            download.halt()
                        else:
                            generate.stop()
                            download.stop()
                    if reason == "finished":  # (another worker's late responses are its own to parse)
                        parse.halt()
                    else:
                        parse.stop()
                watchers.cancel_scope.cancel("done")
            for writer in unique_writers:
                writer.close()
        return reason

    def _cron_modules(self) -> list[CompiledModule]:
        return [module for module in self._modules.values() if module.cron is not None]

    def _cron_runner(self, module: CompiledModule, router: Router, coordination: Coordination) -> CronRunner:
        assert module.cron is not None
        schedule = CronSchedule(module.cron, misfire_tolerance=module.cron_misfire)

        claims = None if self._ownership is None else CronClaims(self._ownership, coordination)

        async def fire(when: float) -> None:
            tasks = start_tasks(module, f"cron{int(when)}")
            if claims is not None:  # a cluster: the accounts this node owns, each fire once job-wide
                tasks = await claims.claim(tasks, when, misfire_tolerance=module.cron_misfire)
            logger.info("cron: starting %s (%s), %d run(s)", module.name, module.cron, len(tasks))
            await router.seed(tasks)

        self._crons_running += 1
        is_leader = coordination.is_leader if claims is None else None  # a cluster: every node fires
        return CronRunner(schedule, fire, is_leader=is_leader, max_fires=self._settings.crawl.cron_max_fires)

    async def _run_cron(self, cron: CronRunner) -> None:
        try:
            await cron.run()
        finally:
            self._crons_running -= 1

    async def _watch_signals(self, force: anyio.CancelScope) -> None:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for signum in signals:
                if self._interrupted.is_set():
                    logger.warning("second %s: stopping now", signal.Signals(signum).name)
                    force.cancel("forced stop")
                    return
                logger.warning("%s: draining (send it again to stop now)", signal.Signals(signum).name)
                self._interrupted.set()

    async def _report(self, progress: Callable[[Progress], Any], interval: float) -> None:
        assert self._queue is not None
        queued: dict[str, int] = {}
        while True:
            await anyio.sleep(interval)
            snapshot = self._stats.snapshot()
            try:
                queued = {topic: await self._queue.pending(topic) for topic in TOPICS}
            except TRANSIENT as exc:  # the broker is out of reach: report the last counts
                assert self._outage is not None
                self._outage.failed(exc, "counting queued messages")
            progress(Progress(stats=snapshot, queued=queued))

    async def _open_downloaders(self, stack: AsyncExitStack) -> dict[str, Downloader]:
        downloaders = dict(self._extra_downloaders)
        if "default" not in downloaders:
            downloaders["default"] = HttpxDownloader(self._settings.download)
        for downloader in downloaders.values():
            await stack.enter_async_context(downloader)
        return downloaders

    async def _open_writers(self, stack: AsyncExitStack) -> dict[str, ItemWriter]:
        writers: dict[str, ItemWriter] = {}
        by_sink: dict[int, ItemWriter] = {}
        for name, sink in self._sinks.items():
            if sink is None:
                from ..sinks import CallbackSink

                sink = CallbackSink(lambda item: None)
            if id(sink) not in by_sink:
                await sink.open()
                stack.push_async_callback(sink.close)
                by_sink[id(sink)] = ItemWriter(sink, self._chain, self._stats, self._settings.sink)
            writers[name] = by_sink[id(sink)]
        return writers


class _Stages(msgspec.Struct, frozen=True):
    generate: GenerateStage
    download: DownloadStage
    parse: ParseStage


def share_limits(local: DomainLimiter, ownership: Ownership | None) -> DomainLimiter | ShareLimiter:
    """Per-domain limits without a job-wide gate: all of them on one node, the node's share on a cluster."""
    return local if ownership is None else ShareLimiter(local, ownership.member_count)


async def _dead_letters(queue: ActivityQueue) -> tuple[list[Failure], int]:
    """The run's dead letters, the first 1,000 described, and their count (none if the broker is away)."""
    failures: list[Failure] = []
    dead = 0
    try:
        for topic in TOPICS:
            letters = await queue.dead_letters(topic, limit=1_000)
            failures.extend(describe_dead_letter(d) for d in letters[: 1_000 - len(failures)])
            dead += (
                len(letters) if len(letters) < 1_000 else len(await queue.dead_letters(topic, limit=1 << 62))
            )
    except TRANSIENT as exc:
        logger.warning("cannot count the dead letters: %s", exc)
    return failures, dead
