"""The three middleware kinds; a middleware object implements one or more of them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..http import Request, Response

__all__ = ("DataMiddleware", "DownloadMiddleware", "StorageMiddleware")


@runtime_checkable
class DownloadMiddleware(Protocol):
    """Sees every request before download and every response after it.

    Return the (possibly changed) object to go on, or `None` to drop it (counted as dropped, not an error).
    """

    async def before_request(self, request: Request) -> Request | None:
        """Change or drop a request before it is downloaded."""
        ...

    async def after_response(self, response: Response) -> Response | None:
        """Change or drop a response before it is parsed."""
        ...


@runtime_checkable
class DataMiddleware(Protocol):
    """Transforms or drops each item emitted by a parse callback."""

    async def process_item(self, item: Any, response: Response) -> Any | None:
        """Return the item (changed or not) to keep it, `None` to drop it."""
        ...


@runtime_checkable
class StorageMiddleware(Protocol):
    """Sees each batch of items right before a sink writes it (enrich, filter, deduplicate by key)."""

    async def before_write(self, items: Sequence[Any]) -> Sequence[Any]:
        """Return the batch to write."""
        ...
