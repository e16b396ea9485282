"""`JobNode`: jobs of one process side by side, started by code, the CLI or `POST /api/v1/jobs`, with the API.

`mocra serve` is a node that knows the spiders of a file and waits for jobs; `mocra run --api` and
`Mocra.builder().api(...)` are a node running one job first and ending when its jobs have. Every job is
made by `job_builder` and run by its own engine; the node takes SIGINT/SIGTERM for all of them (the first
drains every job, the second stops at once) and stops the server when it ends.
"""

from __future__ import annotations

import contextlib
import logging
import signal
from typing import TYPE_CHECKING, Any

import anyio

from .._errors import ConfigError, MocraError
from ..control import JobRegistry
from ..engine import job_builder
from ._context import AdminContext
from ._server import serving

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from anyio.abc import TaskGroup
    from anyio.streams.memory import MemoryObjectReceiveStream

    from ..config import Settings
    from ..engine import CrawlResult, Engine, MocraBuilder, Progress, StateChange
    from ..modules import Module, Spider
    from ..sinks import DataSink
    from ._context import StartRequest

__all__ = ("JobNode",)

logger = logging.getLogger(__name__)


class JobNode:
    """Runs jobs side by side and serves the admin API over them.

    Args:
        spiders: The spiders and modules `POST /api/v1/jobs` may start, by name (none: it starts none).
        settings: The base settings of every job (the file, `MOCRA_*`, `-s`); `[admin]` for the server.
        sink: Makes a job's sink from its settings and name (`-o items-{job}.jsonl`).
        registry: Where the jobs' views go (the API reads it); a new one by default.

    Example:
        >>> from mocra_core.config import Settings
        >>> node = JobNode([], settings=Settings())
        >>> node.readiness(), node.spiders()
        ((True, 'idle'), [])
    """

    def __init__(
        self,
        spiders: Sequence[Spider[Any] | Module[Any]],
        *,
        settings: Settings,
        sink: Callable[[Settings, str], DataSink | None] | None = None,
        registry: JobRegistry | None = None,
    ) -> None:
        self._spiders = {spider.name: spider for spider in spiders}
        self._settings = settings
        self._sink = sink
        self.registry = registry if registry is not None else JobRegistry()
        self._group: TaskGroup | None = None
        self._running: dict[str, Engine] = {}
        self._draining = False
        self._first: Engine | None = None
        self._changed = anyio.Event()
        self.results: dict[str, CrawlResult | BaseException] = {}
        """How each job that ran here ended: its result, or the error it failed with."""

    def spiders(self) -> list[str]:
        """The names `POST /api/v1/jobs` accepts as `spider`."""
        return sorted(self._spiders)

    def readiness(self) -> tuple[bool, str]:
        """`/ready`: whether the node is ready, and its state.

        A node running a first job (`mocra run --api`, `builder.api()`) is that job's engine: ready when
        `ready` or `active`. A node waiting for jobs (`mocra serve`) is `idle` or `active` (ready), and
        `draining` (not) after Ctrl-C.
        """
        if self._first is not None:
            state = self._first.state
            return state in ("ready", "active"), state
        if self._draining:
            return False, "draining"
        return True, "active" if self._running else "idle"

    def running(self) -> list[str]:
        """The jobs running now."""
        return list(self._running)

    async def start(self, request: StartRequest) -> str:
        """Start a run of `request.spider` (see `JobStarter.start`); returns once its engine is ready.

        Raises:
            ConfigError: unknown spider, an invalid setting, a job of that name running here, the node
                draining, or the run failing to start (naming the part: `queue (redis://…): …`).
        """
        template = self._spiders.get(request.spider)
        if template is None:
            raise ConfigError("spider", f"unknown {request.spider!r}; this node knows {self.spiders()}")
        builder = job_builder(
            [type(template)()],  # a fresh spider per run, as `mocra run` makes one
            settings=self._settings,
            overrides=request.settings,
            start_urls=request.start_urls,
            job=request.job,
            sink=self._sink,
            source="POST /api/v1/jobs",
        )
        return await self.launch(builder)

    async def launch(
        self,
        builder: MocraBuilder,
        *,
        progress: Callable[[Progress], Any] | None = None,
        first: bool = False,
    ) -> str:
        """Run `builder`'s job on this node; returns its name once its engine is ready (or raises)."""
        if self._group is None or self._draining:
            raise ConfigError("job", "this node is not taking jobs (it is draining, or not running)")
        name = builder.job
        if name in self._running:
            raise ConfigError("job", f"{name!r} is running on this node; give the new run another name")
        engine = builder.registry(self.registry).build()
        if first:
            self._first = engine
        self._running[name] = engine
        self._notify()
        events = engine.events()  # open until the run ends (a subscriber leaving early is not closed)
        self._group.start_soon(self._run, name, engine, progress, events, name=f"job {name}")
        async for change in events:  # until its view is registered, or it failed
            if change.part == "engine" and change.new != "prepare":
                break
        if engine.state == "failed":
            while name in self._running:  # its task records the error
                await self._next_change()
            error = self.results.get(name)
            raise error if isinstance(error, MocraError) else ConfigError("job", f"{name!r} failed to start")
        return name

    async def _next_change(self) -> None:
        await self._changed.wait()

    def _notify(self) -> None:
        """Wake whoever waits for a job to start or end (`_next_change`)."""
        self._changed.set()
        self._changed = anyio.Event()

    async def _run(
        self,
        name: str,
        engine: Engine,
        progress: Callable[[Progress], Any] | None,
        events: MemoryObjectReceiveStream[StateChange],
    ) -> None:
        try:
            self.results[name] = await engine.run(progress=progress)
            logger.info("job %s ended: %s", name, self.results[name].reason)  # type: ignore[union-attr]
        except Exception as exc:  # one job's failure is not the node's
            self.results[name] = exc
            logger.error("job %s failed: %s", name, exc)
        finally:
            events.close()
            del self._running[name]
            self._notify()

    def drain(self) -> None:
        """Take no more jobs; every running job drains (in-flight work ends, sinks flush) and returns."""
        self._draining = True
        for engine in self._running.values():
            engine.interrupt()
        self._notify()

    async def _watch_signals(self, force: anyio.CancelScope) -> None:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for signum in signals:
                if self._draining:
                    logger.warning("second %s: stopping now", signal.Signals(signum).name)
                    force.cancel()
                    return
                logger.warning(
                    "%s: draining every job (send it again to stop now)", signal.Signals(signum).name
                )
                self.drain()

    async def _settled(self, *, until_idle: bool) -> None:
        while self._running or not (until_idle or self._draining):
            await self._next_change()

    async def run(
        self,
        address: str | None,
        *,
        first: MocraBuilder | None = None,
        progress: Callable[[Progress], Any] | None = None,
        until_idle: bool = False,
        handle_signals: bool = False,
        on_listening: Callable[[str], Any] | None = None,
    ) -> CrawlResult | None:
        """Serve the API on `address` (None: no API) and run jobs until drained, or idle with `until_idle`.

        Args:
            address: `host:port` of the admin API.
            first: A job to run at once (`mocra run --api`); its result is returned (its error raised).
            progress: Called with the first job's progress every second.
            until_idle: End once no job runs (after `first`); else run until `drain` or a signal.
            handle_signals: Take SIGINT/SIGTERM (main thread only): the first drains, the second stops.
            on_listening: Called with the server's URL once it listens.

        Raises:
            ConfigError: the address cannot be listened on; `first` failed to start.
        """
        context = AdminContext(
            jobs=self.registry,
            readiness=self.readiness,
            settings=self._settings.admin,
            starter=self if self._spiders else None,
            store_url=self._settings.store.url,
        )
        async with contextlib.AsyncExitStack() as stack:
            if address is not None:
                server = await stack.enter_async_context(serving(context, address))
                if on_listening is not None:
                    on_listening(server.url)
            async with anyio.create_task_group() as group:
                self._group = group
                if handle_signals:
                    group.start_soon(self._watch_signals, group.cancel_scope)
                name = None if first is None else await self.launch(first, progress=progress, first=True)
                await self._settled(until_idle=until_idle)
                group.cancel_scope.cancel()  # the signal watcher
            self._group = None
        if name is None:
            return None
        outcome = self.results[name]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome
