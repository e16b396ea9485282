"""`HttpCacheSettings`: the development HTTP cache (`[http_cache]`, `-s http_cache.enabled=true`)."""

from __future__ import annotations

import os

import msgspec

from .._bounds import at_least

__all__ = ("HttpCacheSettings",)


class HttpCacheSettings(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """A response cache for developing a spider: a run answered from it does not hit the site again.

    Every response is stored whatever its headers say (as Scrapy's `DummyPolicy`): this is for re-running a
    spider while writing it, not an RFC 9111 cache. Entries are keyed by the downloader (and its session)
    and the request's fingerprint (method, canonical URL, body); a stored redirect chain is checked again,
    hop by hop, as a fresh download's would be.

    Attributes:
        enabled: Answer downloads from the cache, storing what is fetched.
        dir: The cache's directory (an LMDB environment; delete it to start afresh). Unset: `httpcache` in
            `crawl.job_dir`, else `.mocra/httpcache` under the working directory.
        expiration: Seconds an entry is used; an older one is fetched again (0 = never expires).
        ignore_statuses: Responses with these statuses are not stored (e.g. `[404]`), besides those the
            crawl retries (`retry.statuses`), so that a retry reaches the site.
        ignore_schemes: Requests to these URL schemes bypass the cache (e.g. `["https"]`).
        ignore_missing: Offline: a request not in the cache fails (`NotCached`, not retried) instead of
            being fetched.

    Example:
        >>> HttpCacheSettings(enabled=True).expiration
        0.0
        >>> HttpCacheSettings(expiration=-1)
        Traceback (most recent call last):
        ...
        ValueError: expiration: must be at least 0, got -1
    """

    enabled: bool = False
    dir: str | None = None
    expiration: float = 0.0
    ignore_statuses: frozenset[int] = frozenset()
    ignore_schemes: frozenset[str] = frozenset()
    ignore_missing: bool = False

    def __post_init__(self) -> None:
        at_least(self, 0, "expiration")
        bad = sorted(s for s in self.ignore_statuses if not 100 <= s <= 599)
        if bad:
            raise ValueError(f"ignore_statuses: not HTTP statuses: {bad!r}")
        if self.dir is not None and not self.dir.strip():
            raise ValueError("dir: must not be empty (leave it unset for the default)")

    def directory(self, job_dir: str | None) -> str:
        """The cache's directory, absolute: `dir`, else in `job_dir`, else `.mocra/httpcache` here.

        Example:
            >>> HttpCacheSettings(dir="/tmp/c").directory("/jobs/a")
            '/tmp/c'
            >>> HttpCacheSettings().directory("/jobs/a")
            '/jobs/a/httpcache'
        """
        if self.dir is not None:
            return os.path.abspath(self.dir)
        if job_dir is not None:
            return os.path.join(os.path.abspath(job_dir), "httpcache")
        return os.path.abspath(os.path.join(".mocra", "httpcache"))
