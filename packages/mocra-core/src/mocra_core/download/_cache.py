"""`CachedDownloader`: the development HTTP cache, a `Downloader` wrapped around any other.

A download the cache holds is answered from it: its redirect hops are checked again (the engine's scope,
robots.txt and seen-set check) and the response comes back without touching the site. Anything else is
fetched by the wrapped downloader and stored, unless its status is ignored. `cache_downloaders` wraps
a run's downloaders when `[http_cache] enabled` is set.
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Self, cast

import anyio
import httpx

from .._errors import DownloadError, HopRefused
from ..http import Response
from ._cookies import store_cookies
from ._protocol import Hop, checks_hops

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from types import TracebackType

    from ..backends.lmdb._http_cache import CachedHop, CachedResponse, CacheEntry, HttpCacheStore
    from ..http import Request
    from ._cache_settings import HttpCacheSettings
    from ._protocol import Downloader, HopCheck, HopCheckingDownloader

__all__ = ("CachedDownloader", "NotCached", "cache_downloaders", "unwrap")

logger = logging.getLogger(__name__)


class NotCached(DownloadError):
    """`http_cache.ignore_missing` is set and the request is not in the cache; not retried."""

    retryable = False


@dataclass
class CacheCounts:
    """Downloads answered from the cache and downloads stored in it (shared by a downloader's sessions)."""

    hits: int = 0
    stored: int = 0


class CachedDownloader:
    """A `Downloader` answering from an HTTP cache (`HttpCacheStore`) and storing what `inner` fetches.

    Entries are keyed by `inner.name` (a session's name includes its key) and `Request.fingerprint`.
    A stored download keeps its redirect hops: `download(request, hop=check)` asks `check` about each again
    before answering, and a refusal raises `HopRefused` as a fresh download would; a download stopped by a
    refused hop is stored too, so the next run refuses it without a request (or fetches it, if the hop is
    now let through). An entry older than `settings.expiration`, or one that cannot be read, is fetched
    again and replaced. Cookies a stored response sets go into `inner`'s jar (`inner.cookies`, as
    `HttpxDownloader` has); those set by its redirect hops are not replayed.

    Args:
        inner: The downloader that fetches what the cache does not hold; opened and closed with this one.
        store: Where entries live; closed with this downloader.
        settings: Expiration and what is not cached (`HttpCacheSettings`).
        clock: Seconds since the epoch (stored with each entry, compared with `expiration`).
        retried: Statuses the crawl retries (`retry.statuses`): not stored, as `settings.ignore_statuses`,
            so that a retry reaches the site rather than the same stored failure.

    Example:
        >>> import anyio, tempfile
        >>> from mocra_core.backends.lmdb._http_cache import HttpCacheStore
        >>> from mocra_core.download import HttpCacheSettings, HttpxDownloader
        >>> from mocra_core.http import Request
        >>> from mocra_core.testing import LocalServer, ServerResponse
        >>> server = LocalServer({"/": ServerResponse(body="<h1>hi</h1>")})
        >>> async def main(path: str) -> list[bytes]:
        ...     bodies = []
        ...     async with server.running() as base_url:
        ...         for _ in range(2):  # two runs
        ...             inner, store = HttpxDownloader(), HttpCacheStore(path)
        ...             async with CachedDownloader(inner, store, HttpCacheSettings()) as downloader:
        ...                 bodies.append((await downloader.download(Request(base_url + "/"))).body)
        ...     return bodies
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     anyio.run(main, tmp)
        [b'<h1>hi</h1>', b'<h1>hi</h1>']
        >>> server.hits["/"]
        1
    """

    def __init__(
        self,
        inner: Downloader,
        store: HttpCacheStore,
        settings: HttpCacheSettings,
        *,
        clock: Callable[[], float] = time.time,
        retried: frozenset[int] = frozenset(),
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.counts = CacheCounts()
        self._store = store
        self._settings = settings
        self._clock = clock
        self._unstored = frozenset(settings.ignore_statuses) | retried
        self._owns_store = True
        self._ignored_schemes = frozenset(scheme.lower() for scheme in settings.ignore_schemes)
        self._prefix = hashlib.blake2b(inner.name.encode(), digest_size=8).digest()

    def session(self, key: str) -> CachedDownloader:
        """The cached view of `inner.session(key)` (its own entries); this downloader if `inner` has none."""
        make = getattr(self.inner, "session", None)
        if not callable(make):
            return self
        view = CachedDownloader(make(key), self._store, self._settings, clock=self._clock)
        view.counts, view._owns_store, view._unstored = self.counts, False, self._unstored
        return view

    async def download(self, request: Request, *, hop: HopCheck | None = None) -> Response:
        """Answer `request` from the cache, or fetch it with `inner` and store it (see the class notes).

        Raises:
            HopRefused: `hop` refused a redirect hop (stored, or met while fetching).
            NotCached: `ignore_missing` is set and the cache cannot answer.
            DownloadError: `inner` failed (nothing is stored).
        """
        settings = self._settings
        if request.url.partition(":")[0].lower() in self._ignored_schemes:
            return await self.inner.download(request)
        key = self._prefix + request.fingerprint
        entry = await self._store.get(key)
        if entry is not None and (
            settings.expiration <= 0 or self._clock() - entry.stored_at <= settings.expiration
        ):
            start = time.perf_counter()
            await _check_hops(
                entry.hops, request, hop, 0 if entry.response is None else len(entry.response.body)
            )
            if entry.response is not None:
                self.counts.hits += 1
                self._set_cookies(entry)
                cached = entry.response
                elapsed = time.perf_counter() - start
                return Response(
                    cached.url, cached.status, cached.headers, cached.body, request, elapsed=elapsed
                )
        if settings.ignore_missing:
            raise NotCached(
                f"{request.method} {request.url} is not in the HTTP cache (http_cache.ignore_missing)",
                request=request,
            )
        return await self._fetch_and_store(key, request, hop)

    async def _fetch_and_store(self, key: bytes, request: Request, hop: HopCheck | None) -> Response:
        from ..backends.lmdb._http_cache import CachedHop, CacheEntry

        hops: list[CachedHop] = []
        stored_at = self._clock()
        if not checks_hops(self.inner):
            response = await self.inner.download(request)
            if response.url != request.url:  # the intermediate hops are unknown: record where it landed
                method = "HEAD" if request.method == "HEAD" else "GET"
                hops.append(CachedHop(response.url, method, None, 0))
            await self._store_response(key, CacheEntry(stored_at, hops, _cached(response)), response.status)
            await _check_hops(hops, request, hop, len(response.body))
            return response

        async def recorded(next_hop: Hop) -> str | None:
            hops.append(CachedHop(next_hop.url, next_hop.method, next_hop.body, next_hop.status))
            return None if hop is None else await hop(next_hop)

        try:
            response = await cast("HopCheckingDownloader", self.inner).download(request, hop=recorded)
        except HopRefused:
            await self._store.put(key, CacheEntry(stored_at, hops, None))
            raise
        await self._store_response(key, CacheEntry(stored_at, hops, _cached(response)), response.status)
        return response

    async def _store_response(self, key: bytes, entry: CacheEntry, status: int) -> None:
        if status not in self._unstored:
            await self._store.put(key, entry)
            self.counts.stored += 1

    def _set_cookies(self, entry: CacheEntry) -> None:
        jar = getattr(self.inner, "cookies", None)
        cached = entry.response
        if cached is None or not isinstance(jar, httpx.Cookies):
            return
        values = [value for name, value in cached.headers if name.lower() == "set-cookie"]
        if values:
            store_cookies(jar, cached.url, values)

    async def aclose(self) -> None:
        """Close `inner`, then release the store (a session view leaves the store to its parent)."""
        try:
            await self.inner.aclose()
        finally:
            if self._owns_store:
                with anyio.CancelScope(shield=True):
                    await self._store.aclose()

    async def __aenter__(self) -> Self:
        await self.inner.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            await self.inner.__aexit__(exc_type, exc, tb)
        finally:
            if self._owns_store:
                with anyio.CancelScope(shield=True):
                    await self._store.aclose()
                counts = self.counts
                logger.info(
                    "HTTP cache %s (%s): %d answered from the cache, %d stored",
                    self._store.path,
                    self.name,
                    counts.hits,
                    counts.stored,
                )

    def __repr__(self) -> str:
        return f"<CachedDownloader {self.inner!r} in {self._store.path!r}>"


def _cached(response: Response) -> CachedResponse:
    from ..backends.lmdb._http_cache import CachedResponse

    headers = list(response.headers.multi_items())
    return CachedResponse(response.url, response.status, headers, response.body, response.elapsed)


async def _check_hops(hops: list[CachedHop], request: Request, hop: HopCheck | None, received: int) -> None:
    """Ask `hop` about each stored hop in turn; the first refusal raises `HopRefused`."""
    if hop is None:
        return
    for stored in hops:
        refused = await hop(Hop(stored.url, stored.method, stored.body, stored.status))
        if refused is not None:
            raise HopRefused(stored.url, refused, request=request, received=received)


def cache_downloaders(
    downloaders: Mapping[str, Downloader],
    settings: HttpCacheSettings,
    *,
    job_dir: str | None,
    retried: frozenset[int] = frozenset(),
) -> dict[str, Downloader]:
    """Each of `downloaders` wrapped in a `CachedDownloader` on the cache directory the settings name.

    `retried` are the statuses the crawl retries (`retry.statuses`), which are not stored.

    Raises:
        ConfigError: the directory cannot be opened (`http_cache.dir`).
    """
    from ..backends.lmdb._http_cache import HttpCacheStore

    path = settings.directory(job_dir)
    wrapped: dict[str, Downloader] = {}
    for name, downloader in downloaders.items():
        wrapped[name] = CachedDownloader(downloader, HttpCacheStore(path), settings, retried=retried)
    logger.info("HTTP cache: %s", path)
    return wrapped


def unwrap(downloader: Downloader) -> Downloader:
    """The downloader a `CachedDownloader` wraps, or `downloader` itself."""
    return downloader.inner if isinstance(downloader, CachedDownloader) else downloader
