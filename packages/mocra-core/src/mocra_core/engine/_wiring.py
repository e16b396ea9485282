"""The composition of a run: its local parts (downloaders, sinks) and its stages, built from opened backends.

`Wiring` builds; it starts nothing (`StageRunner` runs what it built). Each stage gets only the few things
it uses: the queue, the module table, the run book, admission of requests, the task router, the fan-in
ledger, its writers or downloaders, and the run's stats and outage. The download stage's adaptive pace
(`Pace`: autoscale, autothrottle) is built here too, and run beside the stages by `StageRunner`, and so is
the `[proxy]` route (its pool opened once per run) that the built-in downloaders send requests through.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING

from .._errors import ConfigError
from ..download import (
    AiohttpDownloader,
    DomainLimiter,
    GatedLimiter,
    HttpxDownloader,
    RetryPolicy,
    RobotsPolicy,
    ShareLimiter,
    build_downloader,
)
from ..download._cache import cache_downloaders, unwrap
from ..download._proxy_pool import open_proxy_route
from ..schedule import CronRunner, CronSchedule
from ._admission import Admission
from ._backends import open_part
from ._fan_in import FanIn
from ._frontier import Frontier
from ._module_table import ModuleTable
from ._outage import Outage
from ._router import TaskRouter
from ._runbook import RunBook
from ._unparsed import UnparsedMarks
from .download import DownloadStage, HopGuard, LoginManager, Pace, Politeness
from .generate import CronClaims, GenerateStage, start_tasks
from .generate._sitemap_plan import sitemap_plans
from .generate._sitemaps import SitemapFetch, SitemapTasks
from .parse import ItemWriter, ParseStage

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping

    from ..config import Settings, SinkSettings
    from ..control import Hold
    from ..coordination import Coordination, Ownership
    from ..download import Downloader, ProxyRoute
    from ..middleware import MiddlewareChain
    from ..modules import CompiledModule, CronEntry, Task
    from ..observe import Stats
    from ..queue import QueueBackend
    from ..sinks import DataSink
    from ._backends import Backends
    from ._budget import PageBudget
    from ._lifecycle import Lifecycle
    from ._plan import BackendPlan

__all__ = (
    "STAGES",
    "Crons",
    "Stages",
    "Wiring",
    "open_downloaders",
    "open_writers",
    "proxy_state_url",
    "route_proxies",
    "share_limits",
)

logger = logging.getLogger(__name__)

STAGES = ("generate", "download", "parse")
"""The part names of the stages, in the order work flows through them."""


@dataclasses.dataclass(frozen=True)
class Stages:
    """The stages of a run, and what the engine and the end check share with them."""

    generate: GenerateStage
    download: DownloadStage
    parse: ParseStage
    router: TaskRouter
    outage: Outage
    pace: Pace = Pace()
    proxies: ProxyRoute | None = None
    modules: ModuleTable | None = None


class Crons:
    """The cron schedules of a run, and how many still run (the run is not over while one does)."""

    def __init__(self, runners: list[CronRunner]) -> None:
        self.runners = runners
        self.running = len(runners)

    async def run(self, runner: CronRunner) -> None:
        """Run one schedule to its end."""
        try:
            await runner.run()
        finally:
            self.running -= 1


class Wiring:
    """Builds the stages of a run from its opened backends.

    Args:
        modules: The run's modules by name.
        settings: The run's settings.
        chain: The middlewares.
        stats: The run's counters.
        ownership: A cluster's ownership (cron fires by account owner, per-domain shares), or None.
        hold: The run's pause gate: while held, no download or generation starts.
        generations: The generation of each module's code (`check_modules`), stamped on new work.
    """

    def __init__(
        self,
        modules: Mapping[str, CompiledModule],
        settings: Settings,
        chain: MiddlewareChain,
        stats: Stats,
        *,
        ownership: Ownership | None,
        hold: Hold | None = None,
        generations: Mapping[str, int] | None = None,
    ) -> None:
        self._hold = hold
        self._generations = generations
        self._modules = modules
        self._settings = settings
        self._chain = chain
        self._stats = stats
        self._ownership = ownership

    async def stages(
        self,
        stack: AsyncExitStack,
        backends: Backends,
        queue: QueueBackend,
        downloaders: Mapping[str, Downloader],
        writers: Mapping[str, ItemWriter],
        budget: PageBudget | None,
    ) -> Stages:
        """Build the stages on `queue` (the backends' queue, counted); the gated limiter enters `stack`."""
        settings, stats, ownership = self._settings, self._stats, self._ownership
        crawl = settings.crawl
        proxies = await route_proxies(stack, settings, downloaders, backends.plan, self._modules, stats)
        frontier = Frontier(queue, backends.seen, stats, max_depth=crawl.max_depth)
        affinity = ownership.partition_key if ownership and crawl.account_affinity else None
        modules = ModuleTable(self._modules, queue, generations=self._generations)
        runbook = RunBook(backends.coordination)
        router = TaskRouter(queue, modules, runbook, affinity=affinity)
        admission, fan_in = Admission(frontier, runbook, router, stats), FanIn(runbook, router)
        robots = (
            RobotsPolicy(downloaders["default"], user_agent=settings.download.user_agent)
            if crawl.obey_robots
            else None
        )
        local = DomainLimiter(
            concurrency=crawl.per_domain_concurrency,
            delay=crawl.per_domain_delay,
            max_backoff=settings.retry.max_domain_backoff,
        )
        # job-wide politeness for the workers of a shared queue (a cluster: each node's share instead)
        limiter = (
            share_limits(local, ownership)  # a cluster without a gate: this node's share
            if backends.gate is None
            else await stack.enter_async_context(GatedLimiter(local, backends.gate))
        )
        pace = Pace.from_settings(settings, backends.coordination, shared=backends.plan.shared)
        if pace.autoscale is not None:  # the stats show how many downloads it lets run at once
            stats.concurrency = pace.autoscale.desired
            pace.autoscale.on_rescale = functools.partial(setattr, stats, "concurrency")
        unparsed = UnparsedMarks(backends.coordination) if crawl.direct_parse else None
        outage = Outage(crawl.outage_timeout)
        parse = ParseStage(
            queue, modules, runbook, admission, router, fan_in, writers, self._chain, stats, unparsed, outage
        )
        fetch = await stack.enter_async_context(SitemapFetch(settings.download, robots))  # closed at the end
        sitemaps = SitemapTasks(
            queue, admission, router, stats, fetch, sitemap_plans(self._modules), backends.seen
        )
        generate = GenerateStage(
            queue, modules, runbook, admission, router, fan_in, dict(writers), stats, outage, sitemaps,
            hold=self._hold,
        )  # fmt: skip
        download = DownloadStage(
            queue,
            modules,
            runbook,
            fan_in,
            LoginManager(dict(downloaders)),
            Politeness(
                limiter=limiter,
                retry=RetryPolicy(settings.retry),
                robots=robots,
                hops=HopGuard(backends.seen, robots),
                visibility_timeout=settings.queue.visibility_timeout,
            ),
            self._chain,
            stats,
            budget=budget,
            direct=parse.hand if unparsed is not None else None,
            unparsed=unparsed,
            outage=outage,
            pace=pace,
            hold=self._hold,
        )
        return Stages(
            generate=generate,
            download=download,
            parse=parse,
            router=router,
            outage=outage,
            pace=pace,
            proxies=proxies,
            modules=modules,
        )

    def crons(
        self,
        router: TaskRouter,
        coordination: Coordination,
        *,
        seeded: Callable[[list[Task]], Awaitable[None]] | None = None,
    ) -> Crons:
        """The cron schedules of the run's modules (a module's own `cron`, or a store's schedules).

        `seeded` hears of the tasks each firing queues (the run records).
        """
        return Crons(
            [
                self._cron_runner(module, entry, router, coordination, seeded)
                for module in self._modules.values()
                for entry in module.schedules
            ]
        )

    def _cron_runner(
        self,
        module: CompiledModule,
        entry: CronEntry,
        router: TaskRouter,
        coordination: Coordination,
        seeded: Callable[[list[Task]], Awaitable[None]] | None,
    ) -> CronRunner:
        schedule = CronSchedule(entry.cron, misfire_tolerance=entry.misfire)
        claims = None if self._ownership is None else CronClaims(self._ownership, coordination)

        async def fire(when: float) -> None:
            tasks = start_tasks(module, f"cron{int(when)}", entry.starts)
            if claims is not None:  # a cluster: the accounts this node owns, each fire once job-wide
                tasks = await claims.claim(tasks, when, misfire_tolerance=entry.misfire)
            logger.info("cron: starting %s (%s), %d run(s)", module.name, entry.cron, len(tasks))
            await router.seed(tasks)
            if seeded is not None:
                await seeded(tasks)

        is_leader = coordination.is_leader if claims is None else None  # a cluster: every node fires
        return CronRunner(schedule, fire, is_leader=is_leader, max_fires=self._settings.crawl.cron_max_fires)


async def route_proxies(
    stack: AsyncExitStack,
    settings: Settings,
    downloaders: Mapping[str, Downloader],
    plan: BackendPlan,
    modules: Mapping[str, CompiledModule],
    stats: Stats,
) -> ProxyRoute:
    """Open the `[proxy]` route (its pools enter `stack`) for built-in downloaders without their own.

    Proxy failures are counted in `stats.proxy_failures`; a module's `proxy` naming no pool stops the run.

    Raises:
        ConfigError: a module's `proxy` is neither `"direct"`, a proxy URL nor a configured pool's name.
    """
    proxy = settings.proxy
    state_url = proxy_state_url(proxy.state, plan) if proxy.pool or proxy.pools else None
    opening = open_proxy_route(
        proxy.url,
        proxy.pool,
        pools=proxy.pools,
        state_url=state_url,
        namespace=plan.namespace,
        failures=stats.proxy_failures,
    )
    route = await stack.enter_async_context(opening)
    assert route is not None  # given `failures`, there is always a route
    for module in modules.values():
        if module.proxy is not None:
            try:
                route.resolve(module.proxy)
            except ValueError as exc:
                raise ConfigError(f"{module.name}.proxy", str(exc).removeprefix("proxy: ")) from None
    for downloader in map(unwrap, downloaders.values()):
        if isinstance(downloader, (AiohttpDownloader, HttpxDownloader)) and downloader.routed_by_run:
            downloader.route_proxies(route)
    if route.url is not None or route.pools:
        logger.info("proxies: %r", route)
    return route


def proxy_state_url(state: str, plan: BackendPlan) -> str | None:
    """The Redis URL of `[proxy] state` (`"redis"`: the job's coordination store or queue), or None.

    Raises:
        ConfigError: `"redis"` for a job that has no Redis.
    """
    if state == "memory":
        return None
    if state != "redis":
        return state
    for backend in (plan.coordination, plan.queue):
        if backend is not None and backend.kind == "redis":
            return backend.where
    raise ConfigError(
        "proxy.state",
        "'redis' shares the pool's state through the job's Redis, but this job uses none; "
        "give a redis:// URL",
    )


def share_limits(local: DomainLimiter, ownership: Ownership | None) -> DomainLimiter | ShareLimiter:
    """Per-domain limits without a job-wide gate: all of them on one node, the node's share on a cluster."""
    return local if ownership is None else ShareLimiter(local, ownership.member_count)


async def open_downloaders(
    stack: AsyncExitStack, lifecycle: Lifecycle, given: Mapping[str, Downloader], settings: Settings
) -> dict[str, Downloader]:
    """Open the run's downloaders (the built-in one as `default` unless given) as the part `downloaders`.

    With `[http_cache] enabled`, each is wrapped in a `CachedDownloader`.
    """
    downloaders = dict(given)
    if "default" not in downloaders:
        downloaders["default"] = build_downloader(settings.download)  # [download] transport picks it
    if settings.http_cache.enabled:
        downloaders = cache_downloaders(
            downloaders, settings.http_cache, job_dir=settings.crawl.job_dir, retried=settings.retry.statuses
        )
    names = ", ".join(sorted(downloaders))
    await stack.enter_async_context(
        open_part(lifecycle, "downloaders", names, _entered(downloaders.values()))
    )
    return downloaders


async def open_writers(
    stack: AsyncExitStack,
    lifecycle: Lifecycle,
    sinks: Mapping[str, DataSink | None],
    chain: MiddlewareChain,
    stats: Stats,
    settings: SinkSettings,
) -> dict[str, ItemWriter]:
    """Open each distinct sink once (as the part `sinks`) and give every module the writer of its sink."""
    from ..sinks import CallbackSink

    by_module = {  # `is None`: a sink may be falsy (an empty DataFrameSink has len 0)
        name: CallbackSink(lambda item: None) if sink is None else sink for name, sink in sinks.items()
    }
    distinct = list({id(sink): sink for sink in by_module.values()}.values())
    await stack.enter_async_context(
        open_part(lifecycle, "sinks", ", ".join(repr(s) for s in distinct), _opened(distinct))
    )
    by_sink = {id(sink): ItemWriter(sink, chain, stats, settings) for sink in distinct}
    return {name: by_sink[id(sink)] for name, sink in by_module.items()}


@asynccontextmanager
async def _entered(downloaders: Iterable[Downloader]) -> AsyncIterator[None]:
    async with AsyncExitStack() as stack:
        for downloader in downloaders:
            await stack.enter_async_context(downloader)
        yield


@asynccontextmanager
async def _opened(sinks: Iterable[DataSink]) -> AsyncIterator[None]:
    async with AsyncExitStack() as stack:
        for sink in sinks:
            await sink.open()
            stack.push_async_callback(sink.close)
        yield
