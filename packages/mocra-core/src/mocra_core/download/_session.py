"""`DownloaderSession`: a view of a built-in downloader with its own cookie jar (one login, one account)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx
from anyio.abc import AsyncResource

if TYPE_CHECKING:
    from ..http import Request, Response
    from ._base import PooledDownloader
    from ._protocol import HopCheck

__all__ = ("DownloaderSession",)


class DownloaderSession(AsyncResource):
    """A view of a downloader with its own cookie jar, one per key; see `HttpxDownloader.session`.

    It shares the parent's pool, settings and proxy route (a pool's lease is keyed by the session's key);
    closing it forgets its cookies, not the pool.
    """

    def __init__(self, parent: PooledDownloader[Any], key: str) -> None:
        self._parent = parent
        self.key = key
        self.name = f"{parent.name}[{key}]"
        self._cookies = httpx.Cookies()

    @property
    def cookies(self) -> httpx.Cookies:
        """This session's cookie jar."""
        return self._cookies

    async def download(self, request: Request, *, hop: HopCheck | None = None) -> Response:
        """Fetch `request` with this session's cookies (see `HttpxDownloader.download`)."""
        return await self._parent._fetch(request, self._cookies, hop, self.key)

    async def aclose(self) -> None:
        """Forget this session's cookies; the parent's pool stays open."""
        self._cookies.clear()
        self._parent._forget(self)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"
