"""`Module` (what users write for multi-step crawls) and `CompiledModule` (what the engine runs).

A module is a graph of nodes built and validated with `mocra_dag`'s graph types; a `Spider` compiles to a
one-node module, so both run through the same stages.
"""

from __future__ import annotations

import copy
import inspect
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar, get_args

from mocra_dag import DagError, Graph

from .._errors import ConfigError
from ..scope import DomainSet, Scope, ScopeStrategy, UrlRules
from ._node import Account, Login, Node
from ._starts import CronEntry, Start, code_starts

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping, Sequence

    from ..http import Response
    from ._context import Ctx, TaskCtx
    from ._session import LoginSession
    from ._spider import Spider

__all__ = ("SPIDER_NODE", "CompiledModule", "Module", "compile_module")

T = TypeVar("T")

SPIDER_NODE = "spider"
_STRATEGIES: tuple[str, ...] = get_args(ScopeStrategy)


class Module(Generic[T]):
    """A crawl of several steps: a linear chain or a DAG of `Node`s, with optional login and cron.

    Override `nodes` to return the steps in order (a chain) or a `mocra_dag.Graph` whose payloads are
    nodes (a DAG; the graph's ids are the node ids). The first node (or the graph's single root) is the
    entry: it receives the start task, one per account.

    Attributes:
        name: Unique name in a run.
        accounts: Accounts to run for; each gets its own run, login and cookie jar. Empty: one anonymous run.
        cron: A cron expression (5 fields, or 6 with seconds first); the module then starts on schedule
            instead of once, and the run goes on until interrupted.
        cron_misfire: Seconds a missed cron time may be late and still run.
        relogin_on: Statuses that mean "logged out": the account logs in again and the request is retried.
        downloader: Name of the downloader for this module's requests (`None`: the default one).
        proxy: The proxy of this module's requests: `"direct"`, a pool's name (`"pool"` is `[proxy.pool]`,
            others `[proxy.pools.<name>]`) or a proxy URL; `None` follows the `[proxy]` settings. A
            request's `meta["proxy"]` wins. As `Spider.proxy`.
        autostart: Start when the crawl starts; `False` for a module that only other modules start
            (`ctx.start("name", meta)`).
        scope: Which links the module's nodes may follow (`"all"`, `"same-hostname"`, `"same-domain"`,
            `"same-origin"`); `None` takes `crawl.scope` from the settings. As `Spider.scope`.
        allowed_domains: Domains the module stays within, subdomains included. As `Spider.allowed_domains`.
        rules: `UrlRules` every follow-up must pass too, after the scope. As `Spider.rules`.
        version: The module's version, compared with a store's (`None`: not checked). As `Spider.version`.
        config: The defaults of the start task's meta; a store row's merged config goes over them.

    Example:
        >>> class Only(Node[dict]):
        ...     pass
        >>> class Tiny(Module[dict]):
        ...     name = "tiny"
        ...     def nodes(self):
        ...         return [Only()]
        >>> compile_module(Tiny()).entry
        'only'
    """

    name: ClassVar[str] = ""
    accounts: ClassVar[Sequence[Account]] = ()
    cron: ClassVar[str | None] = None
    cron_misfire: ClassVar[float] = 60.0
    relogin_on: ClassVar[frozenset[int]] = frozenset()
    downloader: ClassVar[str | None] = None
    proxy: ClassVar[str | None] = None
    autostart: ClassVar[bool] = True
    scope: ClassVar[ScopeStrategy | None] = None
    allowed_domains: ClassVar[Sequence[str]] = ()
    rules: ClassVar[UrlRules | None] = None
    version: ClassVar[str | None] = None
    config: ClassVar[Mapping[str, Any]] = {}

    def nodes(self) -> Sequence[Node[T]] | Graph[Node[T]]:
        """The module's nodes: a sequence (a chain) or a `mocra_dag.Graph` of nodes."""
        raise TypeError(f"{type(self).__name__} must override nodes()")

    async def login(self, session: LoginSession) -> Login | None:
        """Log `session.account` in (requests of the module wait for it); override it to need a login.

        Use `session.get` / `session.post`: cookies the site sets are kept in the account's jar. Return a
        `Login` with extra cookies/headers for every request, or `None`. Raise (e.g. `LoginFailed`) on
        bad credentials: the account's requests then go to the dead-letter queue with the reason.
        """
        return None


class _SpiderNode(Node[Any]):
    id = SPIDER_NODE

    def __init__(self, spider: Spider[Any]) -> None:
        self.spider = spider

    async def generate(self, ctx: TaskCtx[Any]) -> None:
        await self.spider.start(ctx)

    async def parse(self, response: Response, ctx: Ctx[Any]) -> None:
        await self.spider.callback(response.request.callback)(response, ctx)


class CompiledModule:
    """A validated module as the engine sees it: named nodes in a graph, plus login, accounts and cron.

    `scope` and `rules` decide which follow-ups the module may make: a follow must be in `scope`
    relative to the URL of the request it was found from (`scope.allows(url, origin=parent_url)`), then
    pass `rules` when there are some. `scope_declared` is True when the module set its own `scope` or
    `allowed_domains`, which then win over the settings' `crawl.scope` (see `with_default_scope`).
    """

    def __init__(
        self,
        name: str,
        graph: Graph[Node[Any]],
        *,
        source: object,
        accounts: Sequence[Account] = (),
        login: Callable[[LoginSession], Awaitable[Login | None]] | None = None,
        cron: str | None = None,
        cron_misfire: float = 60.0,
        relogin_on: frozenset[int] = frozenset(),
        downloader: str | None = None,
        proxy: str | None = None,
        carry_meta: bool = True,
        autostart: bool = True,
        version: str | None = None,
        config: Mapping[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.graph = graph
        self.source = source
        self.accounts = tuple(accounts)
        self.login = login
        self.cron = cron
        self.cron_misfire = cron_misfire
        self.relogin_on = relogin_on
        self.downloader = downloader
        self.proxy = proxy
        self.carry_meta = carry_meta
        self.autostart = autostart
        self.version = version
        self.config: Mapping[str, Any] = dict(config or {})
        self.starts: tuple[Start, ...]
        self.schedules: tuple[CronEntry, ...]
        self.starts, self.schedules = code_starts(self.accounts, self.config, cron, cron_misfire)
        self.scope = Scope("same-domain")  # `compile_module` sets the module's scope and rules
        self.rules: UrlRules | None = None
        self.scope_declared = False
        roots = graph.roots
        if len(roots) != 1:
            raise ConfigError(f"{name}.nodes", f"a module needs exactly one entry node, found {list(roots)}")
        self.entry = roots[0]
        self.fan_in = frozenset(i for i, node in graph.nodes.items() if node.fan_in)
        self._upstream = {i: self._ancestors(i) for i in self.fan_in}

    def with_default_scope(self, strategy: ScopeStrategy) -> CompiledModule:
        """This module with `strategy` as its scope, unless it declares its own (then it is returned as is).

        How the settings' `crawl.scope` reaches a module compiled before the settings were final.

        Raises:
            ConfigError: an unknown strategy (keyed `crawl.scope`).

        Example:
            >>> from mocra_core.modules import Spider
            >>> class Pages(Spider[None]):
            ...     name = "pages"
            ...     async def parse(self, response, ctx): ...
            >>> compile_module(Pages()).with_default_scope("same-origin").scope
            Scope('same-origin')
        """
        if self.scope_declared or self.scope.strategy == strategy:
            return self
        scoped = copy.copy(self)
        scoped.scope = _default_scope(strategy)
        return scoped

    def with_starts(
        self, starts: Sequence[Start], schedules: Sequence[CronEntry], accounts: Sequence[Account]
    ) -> CompiledModule:
        """This module beginning `starts` (and `schedules`) for `accounts` instead of what its code says.

        How a metadata source (a store) hands the module its work; `accounts` are those the starts name.
        """
        given = copy.copy(self)
        given.starts, given.schedules, given.accounts = tuple(starts), tuple(schedules), tuple(accounts)
        return given

    def node(self, node_id: str) -> Node[Any]:
        """The node with id `node_id` (a bare id or `module/node`); KeyError when unknown."""
        return self.graph.nodes[node_id.rpartition("/")[2]]

    def successors(self, node_id: str) -> tuple[str, ...]:
        """Ids of the nodes after `node_id`."""
        return self.graph.successors(node_id)

    def upstream(self, fan_in_node: str) -> frozenset[str]:
        """Every node a fan-in node waits for (its ancestors)."""
        return self._upstream[fan_in_node]

    def _ancestors(self, node_id: str) -> frozenset[str]:
        seen: set[str] = set()
        stack = list(self.graph.predecessors(node_id))
        while stack:
            current = stack.pop()
            if current not in seen:
                seen.add(current)
                stack.extend(self.graph.predecessors(current))
        return frozenset(seen)


def compile_module(
    source: Module[Any] | Spider[Any], *, scope: ScopeStrategy = "same-domain"
) -> CompiledModule:
    """Validate a module or a spider and compile it for the engine.

    Args:
        source: The spider or module.
        scope: The scope strategy when the source declares neither `scope` nor `allowed_domains` (the
            settings' `crawl.scope`).

    Raises:
        ConfigError: no name, a bad graph (cycle, unknown or duplicate node, unreachable node, several
            entries), a spider that does not override `parse`, or a bad `scope`, `allowed_domains` or
            `rules` (keyed `<name>.scope`, `<name>.allowed_domains`, `<name>.rules`).

    Example:
        >>> from mocra_core.modules import Spider
        >>> class Shop(Spider[None]):
        ...     name = "shop"
        ...     allowed_domains = ("example.com",)
        ...     async def parse(self, response, ctx): ...
        >>> compiled = compile_module(Shop(), scope="same-origin")
        >>> compiled.scope, compiled.scope.allows("https://www.example.com/", origin="http://example.com/")
        (Scope('all', allowed_domains=['example.com']), True)
    """
    from ._spider import Spider

    name = getattr(source, "name", "")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{type(source).__name__}.name", "a spider or module needs a non-empty name")
    if isinstance(source, Spider):
        compiled = _compile_spider(name, source)
    else:
        compiled = _compile_module(name, source)
    compiled.scope, compiled.scope_declared = _scope_of(name, source, scope)
    compiled.rules = _rules_of(name, source)
    return compiled


def _compile_module(name: str, source: object) -> CompiledModule:
    if not isinstance(source, Module):
        raise ConfigError(name, f"expected a Spider or a Module, got {type(source).__name__}")
    if type(source).nodes is Module.nodes:
        raise ConfigError(f"{name}.nodes", "a module must override nodes() to return its nodes")
    try:
        declared = source.nodes()
        graph = declared if isinstance(declared, Graph) else _chain(declared)
    except DagError as exc:
        raise ConfigError(f"{name}.nodes", str(exc)) from exc
    for node_id, node in graph.nodes.items():
        if not isinstance(node, Node):
            raise ConfigError(f"{name}.nodes", f"node {node_id!r} is {type(node).__name__}, not a Node")
    overrides_login = type(source).login is not Module.login
    return CompiledModule(
        name,
        graph,
        source=source,
        accounts=source.accounts,
        login=source.login if overrides_login else None,
        cron=source.cron,
        cron_misfire=source.cron_misfire,
        relogin_on=source.relogin_on,
        downloader=source.downloader,
        proxy=_proxy_of(name, source),
        autostart=source.autostart,
        version=source.version,
        config=source.config,
    )


def _default_scope(strategy: str) -> Scope:
    if strategy not in _STRATEGIES:
        raise ConfigError(
            "crawl.scope", f"unknown strategy {strategy!r}; expected one of {', '.join(_STRATEGIES)}"
        )
    return Scope(strategy)  # type: ignore[arg-type]  # checked just above


def _scope_of(name: str, source: object, default: ScopeStrategy) -> tuple[Scope, bool]:
    """The scope of a module and whether it declared it: its own `scope`/`allowed_domains` win."""
    strategy = getattr(source, "scope", None)
    if strategy is not None and strategy not in _STRATEGIES:
        raise ConfigError(
            f"{name}.scope", f"unknown strategy {strategy!r}; expected one of {', '.join(_STRATEGIES)}"
        )
    domains = DomainSet(getattr(source, "allowed_domains", None) or (), key=f"{name}.allowed_domains")
    if strategy is None and not domains:
        return _default_scope(default), False
    return Scope(strategy, allowed_domains=domains.domains), True


def _proxy_of(name: str, source: object) -> str | None:
    """The module's `proxy` choice, checked for its type (the run checks it names a pool it has)."""
    proxy = getattr(source, "proxy", None)
    if proxy is not None and (not isinstance(proxy, str) or not proxy):
        raise ConfigError(
            f"{name}.proxy", f"expected 'direct', a proxy pool's name or a proxy URL, got {proxy!r}"
        )
    return proxy


def _rules_of(name: str, source: object) -> UrlRules | None:
    rules = getattr(source, "rules", None)
    if rules is not None and not isinstance(rules, UrlRules):
        raise ConfigError(
            f"{name}.rules", f"expected UrlRules(Allow(...), Deny(...)) or None, got {type(rules).__name__}"
        )
    return rules


def _chain(nodes: Sequence[Node[Any]]) -> Graph[Node[Any]]:
    builder = Graph.builder()
    previous: str | None = None
    for node in nodes:
        if not isinstance(node, Node):
            raise ConfigError("nodes", f"{node!r} is not a Node")
        builder.node(node.id, node, after=() if previous is None else previous)
        previous = node.id
    graph: Graph[Node[Any]] = builder.build()
    return graph


def _compile_spider(name: str, spider: Spider[Any]) -> CompiledModule:
    from ._spider import Spider

    routed_elsewhere = bool(spider.sitemap_rules) and all(rule[1] != "parse" for rule in spider.sitemap_rules)
    if type(spider).parse is Spider.parse and not routed_elsewhere:  # sitemap rules may name every callback
        raise ConfigError(f"{name}.parse", "the spider does not override parse(response, ctx)")
    for attr in ("start", "parse"):
        if not inspect.iscoroutinefunction(getattr(spider, attr)):
            raise ConfigError(f"{name}.{attr}", "must be an `async def` method")
    graph: Graph[Node[Any]] = Graph.builder().node(SPIDER_NODE, _SpiderNode(spider)).build()
    return CompiledModule(
        name,
        graph,
        source=spider,
        cron=getattr(spider, "cron", None),
        cron_misfire=getattr(spider, "cron_misfire", 60.0),
        downloader=spider.downloader,
        proxy=_proxy_of(name, spider),
        carry_meta=False,
        version=spider.version,
        config=spider.config,
    )
