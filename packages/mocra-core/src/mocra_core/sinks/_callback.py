"""`CallbackSink`: hand each item to a function of yours."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from ._data_sink import SinkContext

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = ("CallbackSink", "on_item")


class CallbackSink(SinkContext):
    """Calls `fn(item)` once per item, in order; `fn` may be a plain or an `async` function.

    A plain function runs inline on the event loop, so keep it quick (append to a list, bump a
    counter); do slow or blocking work in an `async` function, or use `channel()` and consume the
    items in a task of your own. What `fn` raises propagates unchanged; the engine then retries the
    whole batch, so items before the failing one are delivered again (at-least-once).

    Args:
        fn: Called with each item; its return value is ignored (awaited first if awaitable).

    Example:
        >>> import anyio
        >>> got = []
        >>> async def main() -> None:
        ...     async with CallbackSink(got.append) as sink:
        ...         await sink.write([{"title": "a"}, {"title": "b"}])
        >>> anyio.run(main)
        >>> got
        [{'title': 'a'}, {'title': 'b'}]
    """

    def __init__(self, fn: Callable[[Any], object]) -> None:
        self._fn = fn
        self._is_async = inspect.iscoroutinefunction(fn)

    async def write(self, items: Sequence[object]) -> None:
        """Call the function with each item of the batch, awaiting it when it is async."""
        fn = self._fn
        if self._is_async:
            for item in items:
                await fn(item)  # type: ignore[misc]
            return
        for item in items:
            result = fn(item)
            if inspect.isawaitable(result):
                await result

    def __repr__(self) -> str:
        return f"CallbackSink({getattr(self._fn, '__qualname__', self._fn)!s})"


def on_item(fn: Callable[[Any], object]) -> CallbackSink:
    """Return a sink that calls `fn` with each item; usable as a decorator.

    Example:
        >>> @on_item
        ... async def save(item: dict[str, str]) -> None:
        ...     print("got", item["title"])
        >>> save
        CallbackSink(save)
    """
    return CallbackSink(fn)
