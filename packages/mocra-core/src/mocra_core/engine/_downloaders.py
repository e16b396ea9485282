"""`run_downloaders`: a run's downloaders outside a run, for tools that fetch as a crawl does."""

from __future__ import annotations

from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING

from ._lifecycle import Lifecycle
from ._wiring import open_downloaders

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping

    from ..config import Settings
    from ..download import Downloader

__all__ = ("run_downloaders",)


@asynccontextmanager
async def run_downloaders(
    settings: Settings, given: Mapping[str, Downloader] | None = None
) -> AsyncIterator[dict[str, Downloader]]:
    """Open the downloaders a run with `settings` would use, by name; close them when the block exits.

    The same as the engine builds: `given` ones, the built-in one as `default` (`[download]`: headers,
    cookies, decoding, caps) unless given, each in the HTTP cache with `[http_cache] enabled`. The run's
    `[proxy]` route is not applied (it needs the job's backends). `mocra shell` fetches with `default`.

    Example:
        >>> import anyio
        >>> from mocra_core import Settings
        >>> async def names() -> list[str]:
        ...     async with run_downloaders(Settings()) as downloaders:
        ...         return sorted(downloaders)
        >>> anyio.run(names)
        ['default']
    """
    async with AsyncExitStack() as stack:
        yield await open_downloaders(stack, Lifecycle(), given or {}, settings)
