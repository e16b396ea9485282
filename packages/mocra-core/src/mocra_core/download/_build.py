"""`build_downloader`: the built-in downloader `DownloadSettings.transport` names, decided in one place."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._settings import DownloadSettings

if TYPE_CHECKING:
    from ._aiohttp import AiohttpDownloader
    from ._httpx import HttpxDownloader
    from ._proxy_route import ProxyRoute

__all__ = ("build_downloader",)


def build_downloader(
    settings: DownloadSettings | None = None, *, name: str = "default", proxies: ProxyRoute | None = None
) -> AiohttpDownloader | HttpxDownloader:
    """The built-in downloader of `settings.transport`: `"aiohttp"` (default) or an httpx one.

    `"aiohttp"` is `AiohttpDownloader`; `"httpx-aiohttp"` and `"httpx"` are `HttpxDownloader` over an
    aiohttp pool or httpx's own. They behave alike (the same tests run against each).

    Example:
        >>> build_downloader(DownloadSettings(transport="httpx"), name="plain")
        <HttpxDownloader 'plain' transport='httpx'>
    """
    settings = settings or DownloadSettings()
    if settings.transport == "aiohttp":
        from ._aiohttp import AiohttpDownloader

        return AiohttpDownloader(settings, name=name, proxies=proxies)
    from ._httpx import HttpxDownloader

    return HttpxDownloader(settings, name=name, proxies=proxies)
