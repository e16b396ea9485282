"""`Seeds`, `TaskCtx` and `Ctx`: what spiders and nodes write their requests, items and routes into."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar

import msgspec

from .._errors import InvalidURL
from ..http import Request, Routing
from ._seed_file import read_seed_urls

if TYPE_CHECKING:
    import os
    from collections.abc import Callable, Mapping

    from ..http import Response
    from ..scope import UrlRules
    from ._task import Task

__all__ = ("Ctx", "Route", "Seeds", "TaskCtx")

T = TypeVar("T")


def _callback_name(callback: Callable[..., Any] | str | None) -> str | None:
    if callback is None or isinstance(callback, str):
        return callback
    name = getattr(callback, "__name__", None)
    if not isinstance(name, str):
        raise TypeError(f"callback must be a spider method or its name, got {callback!r}")
    return name


class Route(msgspec.Struct, frozen=True):
    """A task a node asked for: `node` None = every successor; `module` set = another module's entry."""

    meta: dict[str, Any]
    node: str | None = None
    module: str | None = None


class _RouteCalls:
    """Routing calls shared by `TaskCtx` and `Ctx`."""

    __slots__ = ()

    routes: list[Route]
    errors: list[str]
    stop_reason: str | None

    def _current_meta(self) -> dict[str, Any]:
        return {}

    def _merged(self, meta: Mapping[str, Any] | None) -> dict[str, Any]:
        current = self._current_meta()
        return {**current, **meta} if meta else dict(current)

    def next(self, meta: Mapping[str, Any] | None = None) -> None:
        """Send a task to every successor node (a clone each), with the current meta updated by `meta`."""
        self.routes.append(Route(self._merged(meta)))

    def to(self, node: str, meta: Mapping[str, Any] | None = None) -> None:
        """Send a task to the node `node` of this module."""
        self.routes.append(Route(self._merged(meta), node=node))

    def start(self, module: str, meta: Mapping[str, Any] | None = None) -> None:
        """Start another module (its entry node) with this meta."""
        self.routes.append(Route(self._merged(meta), module=module))

    def stop(self, reason: str = "stopped by a node") -> None:
        """Stop this run: work of the run not started yet becomes a no-op (counted as dropped)."""
        self.stop_reason = reason  # type: ignore[misc]  # a slot of both subclasses

    def error(self, message: str) -> None:
        """Record a problem (logged and counted as an error) without failing the response."""
        self.errors.append(message)


class Seeds:
    """Collects the first requests of a crawl (`Spider.start` writes into it).

    Each URL is admitted or set aside on its own: one that cannot be crawled (`htp:/x`, no host) goes to
    `invalid` (the engine logs it and counts it as dropped, `invalid_url`), and the others are kept.

    Attributes:
        requests: The requests seeded so far.
        invalid: An `InvalidURL` (naming the URL and the problem) per URL that was set aside.
        routing: Where every one of `requests` belongs (the engine queues it beside each).
        sitemaps: The sitemap URLs seeded so far (`sitemap`).

    Example:
        >>> seeds = Seeds("books/spider")
        >>> seeds.get("https://example.com/", meta={"page": 1})
        >>> seeds.get("htp:/typo")
        >>> seeds.requests, [problem.url for problem in seeds.invalid]
        ([<Request GET https://example.com/>], ['htp:/typo'])
    """

    __slots__ = ("invalid", "requests", "routing", "sitemaps")

    def __init__(self, node: str, *, run: str | None = None, account: str | None = None) -> None:
        self.routing = Routing(node, run, 0, account)
        self.requests: list[Request] = []
        self.invalid: list[InvalidURL] = []
        self.sitemaps: list[str] = []

    def get(
        self,
        url: str,
        *,
        callback: Callable[..., Any] | str | None = None,
        meta: Mapping[str, Any] | None = None,
        priority: int = 0,
        dont_filter: bool = False,
    ) -> None:
        """Seed a GET request for `url` (absolute).

        A `url` that is not an absolute http(s) URL is not seeded: its `InvalidURL` goes to `invalid`.
        """
        try:
            request = Request(
                url, meta=meta, priority=priority, dont_filter=dont_filter, callback=_callback_name(callback)
            )
        except InvalidURL as exc:
            self.invalid.append(exc)
            return
        self.add(request)

    def from_file(
        self, path: str | os.PathLike[str], *, column: str | int = "url", sheet: str | None = None
    ) -> None:
        """Seed a GET request for each URL in a column of a `.csv` / `.tsv` file or `.xlsx` workbook.

        The file is read here, in the calling thread (`read_seed_urls`: `column` is a header name, or a
        0-based index when there is no header; `sheet` a workbook's sheet). A value that is not an
        absolute http(s) URL goes to `invalid`, as with `get`.

        Raises:
            ConfigError: the file cannot be read, or has no such column or sheet.
            MissingExtra: a workbook without the `excel` extra.
        """
        for url in read_seed_urls(path, column=column, sheet=sheet):
            self.get(url)

    @property
    def meta(self) -> dict[str, Any]:
        """The start task's meta: the spider's `config` with a store row's config over it (the engine's).

        Requests seeded for a task carry it under their own meta; empty for a bare `Seeds`.
        """
        return {}

    def add(self, request: Request) -> None:
        """Seed a request as it is (any method, headers, body)."""
        self.requests.append(request)

    def sitemap(self, url: str) -> None:
        """Seed a sitemap (a spider's): its pages are crawled as the spider's `sitemap_*` attributes say.

        A sitemap index, a gzip or plain-text sitemap, or a robots.txt (its `Sitemap:` lines). Each
        sitemap is a task of its own, read while it streams, by whichever worker takes it. A `url` that is
        not an absolute http(s) URL is not seeded: its `InvalidURL` goes to `invalid`.

        Example:
            >>> seeds = Seeds("shop/spider")
            >>> seeds.sitemap("https://example.com/robots.txt")
            >>> seeds.sitemaps, seeds.requests
            (['https://example.com/robots.txt'], [])
        """
        try:
            Request(url)
        except InvalidURL as exc:
            self.invalid.append(exc)
            return
        self.sitemaps.append(url)


class TaskCtx(_RouteCalls, Seeds, Generic[T]):
    """What `Node.generate` writes into: requests for the task, items, routes to other nodes.

    Requests made here carry the task's meta (updated by the `meta` you pass).

    Attributes:
        task: The task being generated.
        inputs: For a fan-in node: the meta of every task sent to it in this run, in arrival order.
    """

    __slots__ = ("errors", "inputs", "items", "routes", "stop_reason", "task")

    def __init__(self, task: Task, node: str, *, inputs: list[dict[str, Any]] | None = None) -> None:
        Seeds.__init__(self, node, run=task.run, account=task.account)
        self.task = task
        self.inputs: list[dict[str, Any]] = inputs or []
        self.items: list[T] = []
        self.routes: list[Route] = []
        self.errors: list[str] = []
        self.stop_reason: str | None = None

    @property
    def meta(self) -> dict[str, Any]:
        """The task's metadata."""
        return self.task.meta

    def _current_meta(self) -> dict[str, Any]:
        return self.task.meta

    @property
    def account(self) -> str | None:
        """Name of the account this run works for, if the module has accounts."""
        return self.task.account

    def add(self, request: Request) -> None:
        """Add a request for this task; the task's meta is merged under the request's own."""
        if self.task.meta:
            request.meta = {**self.task.meta, **request.meta}
        super().add(request)

    def emit(self, item: T) -> None:
        """Emit an item straight from `generate` (e.g. a merge node that needs no request)."""
        self.items.append(item)


class Ctx(_RouteCalls, Generic[T]):
    """What a parse callback writes into: items, requests to follow, and (for module nodes) routes.

    Attributes:
        response: The response being parsed.
        routing: Where every one of `requests` belongs: the response's routing, one hop deeper.

    Example:
        >>> from mocra_core.http import Response
        >>> page = Response("https://example.com/a/1", 200, [], b"", Request("https://example.com/a/1"))
        >>> ctx: Ctx[dict[str, str]] = Ctx(page)
        >>> ctx.emit({"title": "x"})
        >>> ctx.follow("../b/2", meta={"k": 1})
        >>> ctx.items, ctx.requests
        ([{'title': 'x'}], [<Request GET https://example.com/b/2>])
    """

    __slots__ = (
        "_carry_meta", "errors", "invalid", "items", "requests", "response", "routes", "routing",
        "ruled_out", "stop_reason",
    )  # fmt: skip

    def __init__(self, response: Response, *, carry_meta: bool = False) -> None:
        self.response = response
        self.routing = response.routing.deeper()  # one for every follow-up: they share it
        self.items: list[T] = []
        self.requests: list[Request] = []
        self.invalid: list[InvalidURL] = []
        self.ruled_out = 0  # follows the `rules` of their own call denied
        self.routes: list[Route] = []
        self.errors: list[str] = []
        self.stop_reason: str | None = None
        self._carry_meta = carry_meta

    @property
    def meta(self) -> dict[str, Any]:
        """The response's meta (for module nodes: the task's meta, carried by its requests)."""
        return self.response.request.meta

    def _current_meta(self) -> dict[str, Any]:
        return self.response.request.meta

    def emit(self, item: T) -> None:
        """Emit one item to the sink (after the data middlewares)."""
        self.items.append(item)

    def follow(
        self,
        url_or_request: str | Request,
        *,
        callback: Callable[..., Any] | str | None = None,
        meta: Mapping[str, Any] | None = None,
        priority: int | None = None,
        rules: UrlRules | None = None,
    ) -> None:
        """Follow a link or a request from this response; it is parsed by the same node.

        A relative URL resolves against the response's final URL. A `Request` keeps its method, headers,
        body and meta; `meta` given here is merged over it. The new request inherits the current callback
        unless `callback` names another one; its depth is one more than this response's (`routing`). In a
        module node, the current meta is carried too (it is the task's).

        A link that cannot be crawled (`mailto:`, `javascript:`, no host) is not followed; it is logged and
        counted as dropped (`invalid_url`), and the rest of the page is kept. With `rules` (`UrlRules`), a
        URL they deny is not followed either (counted as dropped, `rules`); the crawl's scope and the
        spider's `rules` are applied to every follow after this, by the engine.
        """
        parent = self.response.request
        if isinstance(url_or_request, Request):
            if rules is not None and not rules.allows(url_or_request.url):
                self.ruled_out += 1
                return
            request = url_or_request.replace()
            if meta:
                request.meta.update(meta)
        else:
            try:
                request = Request(self.response.urljoin(url_or_request), meta=meta)
            except InvalidURL as exc:
                self.invalid.append(exc)
                return
            if rules is not None and not rules.allows(request.url):
                self.ruled_out += 1
                return
        if self._carry_meta and parent.meta:
            request.meta = {**parent.meta, **request.meta}
        name = _callback_name(callback)
        if name is not None:
            request.callback = name
        elif request.callback is None and not isinstance(url_or_request, Request):
            request.callback = parent.callback
        if priority is not None:
            request.priority = priority
        self.requests.append(request)
