"""`MiddlewareChain`: the registered middlewares of a run, ordered by weight."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from ..http import Request, Response

__all__ = ("MiddlewareChain",)

_HOOKS = ("before_request", "after_response", "process_item", "before_write")


class MiddlewareChain:
    """Middlewares sorted by weight (lower runs first; equal weights keep registration order).

    A middleware defines any of the hooks of `DownloadMiddleware`, `DataMiddleware` and `StorageMiddleware`;
    responses pass `after_response` hooks in reverse order (unwinding, as in Scrapy).

    Example:
        >>> class Upper:
        ...     async def process_item(self, item, response):
        ...         return {k: v.upper() for k, v in item.items()}
        >>> chain = MiddlewareChain()
        >>> chain.add(Upper(), weight=10)
        >>> chain.has_data, chain.has_download
        (True, False)
    """

    def __init__(self) -> None:
        self._entries: list[tuple[int, int, object]] = []
        self._before: list[Callable[[Request], Awaitable[Request | None]]] = []
        self._after: list[Callable[[Response], Awaitable[Response | None]]] = []
        self._items: list[Callable[[Any, Response], Awaitable[Any | None]]] = []
        self._batches: list[Callable[[Sequence[Any]], Awaitable[Sequence[Any]]]] = []

    def add(self, middleware: object, *, weight: int = 100) -> None:
        """Register a middleware of one or more kinds.

        Raises:
            TypeError: the object implements none of the three kinds.
        """
        if not any(hasattr(middleware, hook) for hook in _HOOKS):
            raise TypeError(
                f"{middleware!r} is not a middleware: define before_request/after_response, "
                "process_item or before_write"
            )
        self._entries.append((weight, len(self._entries), middleware))
        ordered = [m for _, _, m in sorted(self._entries, key=lambda e: (e[0], e[1]))]
        self._before = [m.before_request for m in ordered if hasattr(m, "before_request")]
        self._after = [m.after_response for m in reversed(ordered) if hasattr(m, "after_response")]
        self._items = [m.process_item for m in ordered if hasattr(m, "process_item")]
        self._batches = [m.before_write for m in ordered if hasattr(m, "before_write")]

    @property
    def has_download(self) -> bool:
        """True when any middleware sees requests or responses."""
        return bool(self._before or self._after)

    @property
    def has_storage(self) -> bool:
        """True when any middleware sees batches before a sink."""
        return bool(self._batches)

    @property
    def has_data(self) -> bool:
        """True when any middleware sees items."""
        return bool(self._items)

    async def before_request(self, request: Request) -> Request | None:
        """Run every download middleware's `before_request`; `None` as soon as one drops it."""
        current: Request | None = request
        for hook in self._before:
            current = await hook(current)  # type: ignore[arg-type]
            if current is None:
                return None
        return current

    async def after_response(self, response: Response) -> Response | None:
        """Run every download middleware's `after_response`, in reverse order (like unwinding)."""
        current: Response | None = response
        for hook in self._after:
            current = await hook(current)  # type: ignore[arg-type]
            if current is None:
                return None
        return current

    async def process_items(self, items: Sequence[Any], response: Response) -> tuple[list[Any], int]:
        """Run the data middlewares over `items`; returns the kept items and how many were dropped."""
        if not self._items:
            return list(items), 0
        kept: list[Any] = []
        for item in items:
            current: Any = item
            for hook in self._items:
                current = await hook(current, response)
                if current is None:
                    break
            if current is not None:
                kept.append(current)
        return kept, len(items) - len(kept)

    async def before_write(self, items: Sequence[Any]) -> Sequence[Any]:
        """Run the storage middlewares over a batch about to be written."""
        for hook in self._batches:
            items = await hook(items)
        return items
