"""`Seeds` and `Ctx`: what a spider or node writes its requests and items into."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .._errors import InvalidURL
from ..http import Request

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from ..http import Response

__all__ = ("Ctx", "Seeds")

T = TypeVar("T")


def _callback_name(callback: Callable[..., Any] | str | None) -> str | None:
    if callback is None or isinstance(callback, str):
        return callback
    name = getattr(callback, "__name__", None)
    if not isinstance(name, str):
        raise TypeError(f"callback must be a spider method or its name, got {callback!r}")
    return name


class Seeds:
    """Collects the first requests of a crawl (`Spider.start` writes into it).

    Example:
        >>> seeds = Seeds("books")
        >>> seeds.get("https://example.com/", meta={"page": 1})
        >>> seeds.requests
        [<Request GET https://example.com/>]
    """

    __slots__ = ("_node", "requests")

    def __init__(self, node: str) -> None:
        self._node = node
        self.requests: list[Request] = []

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

        Raises:
            InvalidURL: `url` is not an absolute http(s) URL.
        """
        self.add(
            Request(
                url, meta=meta, priority=priority, dont_filter=dont_filter, callback=_callback_name(callback)
            )
        )

    def add(self, request: Request) -> None:
        """Seed a request as it is (any method, headers, body)."""
        if request.node is None:
            request.node = self._node
        self.requests.append(request)


class Ctx(Generic[T]):
    """What a parse callback writes into: items to emit and requests to follow.

    Example:
        >>> from mocra_core.http import Response
        >>> page = Response("https://example.com/a/1", 200, [], b"", Request("https://example.com/a/1"))
        >>> ctx: Ctx[dict[str, str]] = Ctx(page)
        >>> ctx.emit({"title": "x"})
        >>> ctx.follow("../b/2", meta={"k": 1})
        >>> ctx.items, ctx.requests
        ([{'title': 'x'}], [<Request GET https://example.com/b/2>])
    """

    __slots__ = ("invalid", "items", "requests", "response")

    def __init__(self, response: Response) -> None:
        self.response = response
        self.items: list[T] = []
        self.requests: list[Request] = []
        self.invalid: list[InvalidURL] = []

    def emit(self, item: T) -> None:
        """Emit one item to the spider's sink (after the data middlewares)."""
        self.items.append(item)

    def follow(
        self,
        url_or_request: str | Request,
        *,
        callback: Callable[..., Any] | str | None = None,
        meta: Mapping[str, Any] | None = None,
        priority: int | None = None,
    ) -> None:
        """Follow a link or a request from this response.

        A relative URL resolves against the response's final URL. A `Request` keeps its method, headers, body
        and meta; `meta` given here is merged over it. The new request inherits the current callback unless
        `callback` names another one, and its depth is one more than this response's.

        A link that cannot be crawled (`mailto:`, `javascript:`, no host) is not followed; it is logged and
        counted as dropped (`invalid_url`), and the rest of the page is kept.
        """
        parent = self.response.request
        if isinstance(url_or_request, Request):
            request = url_or_request.replace()
            if meta:
                request.meta.update(meta)
        else:
            try:
                request = Request(self.response.urljoin(url_or_request), meta=meta)
            except InvalidURL as exc:
                self.invalid.append(exc)
                return
        name = _callback_name(callback)
        if name is not None:
            request.callback = name
        elif request.callback is None and not isinstance(url_or_request, Request):
            request.callback = parent.callback
        if priority is not None:
            request.priority = priority
        if request.node is None:
            request.node = parent.node
        request.depth = parent.depth + 1
        self.requests.append(request)
