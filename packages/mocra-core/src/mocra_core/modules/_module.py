"""Modules and nodes: the unit the engine runs. A `Spider` is adapted into a one-node module."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any, Protocol

from .._errors import ConfigError

if TYPE_CHECKING:
    from ..http import Request, Response
    from ._context import Ctx, Seeds
    from ._spider import Spider
    from ._task import Task

__all__ = ("Module", "Node", "SpiderModule")


class Node(Protocol):
    """One step of a module: turns tasks into requests and responses into items and follow-ups."""

    async def generate(self, task: Task, seeds: Seeds) -> None:
        """Write the requests for `task` into `seeds`."""
        ...

    async def parse(self, response: Response, ctx: Ctx[Any]) -> None:
        """Turn `response` into items and follow-ups written into `ctx`."""
        ...


class Module(Protocol):
    """A named graph of nodes; `entry` is the node that receives the start task."""

    @property
    def name(self) -> str:
        """Unique name within a run."""
        ...

    @property
    def entry(self) -> str:
        """Id of the node that receives the start task."""
        ...

    def node(self, node_id: str) -> Node:
        """Return the node with id `node_id`; raises KeyError for an unknown id."""
        ...


class SpiderModule:
    """Adapts a `Spider` into a one-node module whose node id is the spider's name."""

    __slots__ = ("_spider", "entry", "name")

    def __init__(self, spider: Spider[Any]) -> None:
        name = getattr(spider, "name", "")
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{type(spider).__name__}.name", "a spider needs a non-empty name")
        if type(spider).parse is _base_parse():
            raise ConfigError(f"{name}.parse", "the spider does not override parse(response, ctx)")
        for attr in ("start", "parse"):
            if not inspect.iscoroutinefunction(getattr(spider, attr)):
                raise ConfigError(f"{name}.{attr}", "must be an `async def` method")
        self._spider = spider
        self.name = name
        self.entry = name

    @property
    def spider(self) -> Spider[Any]:
        """The adapted spider."""
        return self._spider

    def node(self, node_id: str) -> Node:
        """The single node of the module."""
        if node_id != self.name:
            raise KeyError(node_id)
        return self

    @property
    def downloader(self) -> str | None:
        """The spider's downloader name, or `None` for the default."""
        return self._spider.downloader

    async def generate(self, task: Task, seeds: Seeds) -> None:
        """Seed the spider (`Spider.start`)."""
        await self._spider.start(seeds)
        self._route(seeds.requests)

    async def parse(self, response: Response, ctx: Ctx[Any]) -> None:
        """Call the request's callback (`parse` by default)."""
        callback = self._spider.callback(response.request.callback)
        await callback(response, ctx)
        self._route(ctx.requests)

    def _route(self, requests: list[Request]) -> None:
        name = self._spider.downloader
        if name is not None:
            for request in requests:
                if request.downloader is None:
                    request.downloader = name


def _base_parse() -> Any:
    from ._spider import Spider

    return Spider.parse
