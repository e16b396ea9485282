"""`Mocra.builder()`: the one place a run is put together."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import anyio

from ..config import Settings
from ..config._load import SettingsLayers, parse_override
from ..middleware import MiddlewareChain
from ..modules import compile_module
from ._engine import CrawlResult, Engine, Progress

if TYPE_CHECKING:
    from collections.abc import Callable

    from mocra_cluster import ClusterConfig

    from ..control import JobRegistry
    from ..download import Downloader
    from ..modules import CompiledModule, Module, Spider
    from ..sinks import DataSink

__all__ = ("Mocra", "MocraBuilder")


class MocraBuilder:
    """Collects spiders, sinks, settings, downloaders and middlewares, then runs them.

    Example:
        >>> from mocra_core.testing import LocalServer, ServerResponse
        >>> from mocra_core.modules import Spider
        >>> from mocra_core.sinks import on_item
        >>> class Pages(Spider[dict[str, int]]):
        ...     name = "pages"
        ...     async def parse(self, response, ctx):
        ...         ctx.emit({"status": response.status})
        >>> server = LocalServer({"/": ServerResponse(body="<p>ok</p>")})
        >>> with server.run_in_thread() as base:
        ...     Pages.start_urls = (base + "/",)
        ...     result = Mocra.builder().spider(Pages(), on_item(print)).set("crawl.obey_robots=false").run()
        {'status': 200}
        >>> result.reason, result.stats.items
        ('finished', 1)
    """

    def __init__(self) -> None:
        self._modules: list[tuple[CompiledModule, DataSink | None]] = []
        self._settings = Settings()
        self._overrides: list[str] = []
        self._chain = MiddlewareChain()
        self._downloaders: dict[str, Downloader] = {}
        self._cluster: ClusterConfig | None = None
        self._registry: JobRegistry | None = None
        self._api: str | None = None
        self._reload: str | None = None

    def spider(self, spider: Spider[Any], sink: DataSink | None = None) -> MocraBuilder:
        """Add a spider; its items go to `sink` (none: items are counted, not kept).

        Raises:
            ConfigError: the spider has no name, its name is taken, or it does not override `parse`.
        """
        return self.module(spider, sink)

    def module(self, module: Module[Any] | Spider[Any], sink: DataSink | None = None) -> MocraBuilder:
        """Add a module (a chain or DAG of nodes, with login and cron); a spider is the one-node case.

        Raises:
            ConfigError: no name, a name already taken, or an invalid graph (the message names the node).
        """
        from .._errors import ConfigError

        compiled = compile_module(module)
        module_name = compiled.name
        if any(existing.name == module_name for existing, _ in self._modules):
            raise ConfigError(f"{module_name}", "two spiders or modules share this name")
        self._modules.append((compiled, sink))
        return self

    def settings(self, settings: Settings) -> MocraBuilder:
        """Use these settings (see `Settings.from_toml`); later `set` calls override them."""
        self._settings = settings
        return self

    def set(self, *overrides: str) -> MocraBuilder:
        """Override settings with `section.key=value` strings, as `mocra run -s` does.

        Example:
            >>> Mocra.builder().set("crawl.concurrency=8").build_settings().crawl.concurrency
            8
        """
        for text in overrides:
            parse_override(text)  # fail early on a malformed override
        self._overrides.extend(overrides)
        return self

    def job_dir(self, path: str) -> MocraBuilder:
        """Keep the crawl's state in `path` so that the same run resumes after Ctrl-C or a crash."""
        return self.set(f"crawl.job_dir={path!r}".replace("'", '"'))

    def reload(self, path: str) -> MocraBuilder:
        """Load new generations of the run's modules from `path`, their file (`mocra run --reload`).

        Alone on its job, the run deploys the file when it changes (imported apart, then activated); a
        worker of a shared job loads it once `mocra deploy` activated its code. Only that file is loaded.

        Example:
            >>> Mocra.builder().reload("spider.py") is not None
            True
        """
        self._reload = path
        return self

    async def deploy(
        self, path: str | None = None, *, verify: str | None = None, activate: int | None = None
    ) -> object:
        """Deploy `path` as the job's next generation, or roll back (`activate=N`), as `mocra deploy` does.

        The job is this builder's (`queue.url` + `crawl.job`, or `crawl.job_dir`); see
        `mocra_core.engine.deploy_to_job` for what it returns and raises.
        """
        from ._deploying import deploy_to_job

        return await deploy_to_job(self.build_settings(), self.job, path, verify=verify, activate=activate)

    def store(self, url: str) -> MocraBuilder:
        """Take the run's work from a mocra-store database (`mocra[store]`), as `mocra run --store` does.

        Every enabled account × platform × module row of the store starts once with its merged config;
        logins use the store's credentials; its schedules fire through cron; each run writes its record.

        Example:
            >>> Mocra.builder().store("sqlite:///mocra.db").build_settings().store.url
            'sqlite:///mocra.db'
        """
        return self.set(f"store.url={url!r}".replace("'", '"'))

    def cluster(self, config: ClusterConfig) -> MocraBuilder:
        """Run as a node of a cluster: its Raft control plane holds the job's shared state (no Redis).

        The run starts the node (`config` from `ClusterConfig.bootstrap`, `.join` or `.from_env`) and
        waits for a leader; the plane is then the job's coordination store (seed-once, idle detection,
        gates, stop flags, locks) and seen set, and it closes when the run ends. The nodes still share
        the crawl through a broker (`queue.url`, e.g. `nats://…`). Needs the `cluster` extra.

        Raises:
            ConfigError: `config` is not a `ClusterConfig`.
            MissingExtra: `mocra_cluster` is not installed.

        Example:
            >>> from mocra_cluster import ClusterConfig
            >>> node = ClusterConfig.bootstrap("node-1", "127.0.0.1:7100", "/tmp/node-1", password="pw")
            >>> Mocra.builder().cluster(node).set("queue.url=nats://127.0.0.1:4222").cluster_config.node_id
            'node-1'
        """
        from .._errors import ConfigError, MissingExtra

        try:
            from mocra_cluster import ClusterConfig
        except ModuleNotFoundError as exc:
            raise MissingExtra("cluster", "Mocra.builder().cluster()") from exc
        if not isinstance(config, ClusterConfig):
            raise ConfigError(
                "cluster",
                f"expected a mocra_cluster.ClusterConfig (ClusterConfig.bootstrap, .join or .from_env), "
                f"got {type(config).__name__}",
            )
        self._cluster = config
        return self

    def registry(self, registry: JobRegistry) -> MocraBuilder:
        """Register the run's `JobView` in `registry` (the admin API's), to read and steer it while it runs.

        Example:
            >>> from mocra_core.control import JobRegistry
            >>> jobs = JobRegistry()
            >>> Mocra.builder().registry(jobs).job_registry is jobs
            True
        """
        self._registry = registry
        return self

    def api(self, address: str = "127.0.0.1:12800") -> MocraBuilder:
        """Serve the admin API and dashboard on `address` while the run runs (`mocra[dashboard]`).

        `/health`, `/ready`, `/metrics`, `/api/v1/jobs/...` (read, pause, resume, stop, dead letters) and
        the dashboard at `/`; writes need a key (`[admin] keys`). It binds 127.0.0.1 unless told
        `0.0.0.0:port`; the run takes Ctrl-C as without it, and the server stops when the run ends.

        Example:
            >>> Mocra.builder().api("127.0.0.1:0").api_address
            '127.0.0.1:0'
        """
        from ..admin import parse_address  # MissingExtra without the dashboard extra

        parse_address(address)
        self._api = address
        return self

    @property
    def api_address(self) -> str | None:
        """Where the run serves its admin API (see `api`), or None."""
        return self._api

    @property
    def job(self) -> str:
        """The job's name: `crawl.job`, else the module names joined by `+`.

        Example:
            >>> Mocra.builder().set("crawl.job=nightly").job
            'nightly'
        """
        from ._plan import job_name

        return job_name(self.build_settings(), [module.name for module, _ in self._modules])

    @property
    def job_registry(self) -> JobRegistry | None:
        """The registry the run's view goes to (see `registry`), or None."""
        return self._registry

    @property
    def cluster_config(self) -> ClusterConfig | None:
        """The cluster this run joins (see `cluster`), or None for a run without one."""
        return self._cluster

    def downloader(self, downloader: Downloader, *, name: str = "default") -> MocraBuilder:
        """Register a downloader.

        `name="default"` replaces the built-in one; other names are chosen per request with
        `Request(downloader=name)`.
        """
        self._downloaders[name] = downloader
        return self

    def middleware(self, middleware: object, *, weight: int = 100) -> MocraBuilder:
        """Register a download, data or storage middleware (lower weight runs first)."""
        self._chain.add(middleware, weight=weight)
        return self

    def build_settings(self) -> Settings:
        """The settings the run will use (base settings plus overrides).

        Raises:
            ConfigError: an override is invalid; the message names its `builder.set(...)` call.
        """
        if not self._overrides:
            return self._settings
        import msgspec

        layers = SettingsLayers(msgspec.to_builtins(self._settings))
        for text in self._overrides:
            path, value = parse_override(text)
            layers.set(path, value, source=f"builder.set({text!r})")
        return layers.convert(source="builder.settings()")

    def build(self) -> Engine:
        """Build the engine without running it: `engine.run()` runs it, `engine.interrupt()` drains it.

        The engine shows the run's lifecycle: `engine.state`, `engine.parts()` (each stage, backend, the
        sinks) and `engine.events()`, a stream of every state change (see `Engine`).
        """
        from .._errors import ConfigError

        if not self._modules:
            raise ConfigError("spider", "add at least one spider or module before running")
        for module, _ in self._modules:
            wanted = getattr(module, "downloader", None)
            if wanted is not None and wanted != "default" and wanted not in self._downloaders:
                raise ConfigError(
                    f"{module.name}.downloader",
                    f"no downloader named {wanted!r}; register it with .downloader(obj, name={wanted!r})",
                )
        settings = self.build_settings()
        if self._cluster is not None:  # a cluster without a broker fails here, before its node starts
            from ._plan import BackendPlan, job_name

            names = [module.name for module, _ in self._modules]
            BackendPlan.decide(settings, job=job_name(settings, names), cluster=self._cluster)
        return Engine(
            self._modules,
            settings,
            self._chain,
            self._downloaders,
            cluster=self._cluster,
            registry=self._registry,
            reload=self._reload,
        )

    async def run_async(
        self, *, handle_signals: bool = False, progress: Callable[[Progress], Any] | None = None
    ) -> CrawlResult:
        """Run inside an existing event loop (anyio or asyncio)."""
        if self._api is None:
            return await self.build().run(handle_signals=handle_signals, progress=progress)
        from ..admin import JobNode

        node = JobNode([], settings=self.build_settings(), registry=self._registry)
        result = await node.run(
            self._api, first=self, progress=progress, until_idle=True, handle_signals=handle_signals
        )
        assert result is not None
        return result

    def run(self, *, progress: Callable[[Progress], Any] | None = None) -> CrawlResult:
        """Run to the end and return the result; blocks. Ctrl-C / SIGTERM drain and return."""
        import threading

        handle = threading.current_thread() is threading.main_thread() and sys.platform != "win32"
        return anyio.run(lambda: self.run_async(handle_signals=handle, progress=progress))


class Mocra:
    """Entry point: `Mocra.builder().spider(spider, sink).run()`."""

    @staticmethod
    def builder() -> MocraBuilder:
        """Start building a run."""
        return MocraBuilder()
