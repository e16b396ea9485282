"""`Module` (what users write for multi-step crawls) and `CompiledModule` (what the engine runs).

A module is a graph of nodes built and validated with `mocra_dag`'s graph types; a `Spider` compiles to a
one-node module, so both run through the same stages.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from mocra_dag import DagError, Graph

from .._errors import ConfigError
from ._node import Account, Login, Node

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from ..http import Response
    from ._context import Ctx, TaskCtx
    from ._session import LoginSession
    from ._spider import Spider

__all__ = ("SPIDER_NODE", "CompiledModule", "Module", "compile_module")

T = TypeVar("T")

SPIDER_NODE = "spider"


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
        autostart: Start when the crawl starts; `False` for a module that only other modules start
            (`ctx.start("name", meta)`).

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
    autostart: ClassVar[bool] = True

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
    """A validated module as the engine sees it: named nodes in a graph, plus login, accounts and cron."""

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
        carry_meta: bool = True,
        autostart: bool = True,
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
        self.carry_meta = carry_meta
        self.autostart = autostart
        roots = graph.roots
        if len(roots) != 1:
            raise ConfigError(f"{name}.nodes", f"a module needs exactly one entry node, found {list(roots)}")
        self.entry = roots[0]
        self.fan_in = frozenset(i for i, node in graph.nodes.items() if node.fan_in)
        self._upstream = {i: self._ancestors(i) for i in self.fan_in}

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


def compile_module(source: Module[Any] | Spider[Any]) -> CompiledModule:
    """Validate a module or a spider and compile it for the engine.

    Raises:
        ConfigError: no name, a bad graph (cycle, unknown or duplicate node, unreachable node, several
            entries), or a spider that does not override `parse`.
    """
    from ._spider import Spider

    name = getattr(source, "name", "")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{type(source).__name__}.name", "a spider or module needs a non-empty name")
    if isinstance(source, Spider):
        return _compile_spider(name, source)
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
        autostart=source.autostart,
    )


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

    if type(spider).parse is Spider.parse:
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
        carry_meta=False,
    )
