"""The download stage: the `Downloader` seam and its httpx implementation, politeness, retries.

Politeness is `DomainLimiter` (per-domain concurrency, delay, adaptive slow-down) and `RobotsPolicy`
(robots.txt); `RetryPolicy` decides whether and when a failed download is tried again.
"""

from __future__ import annotations

from ._decode import ACCEPT_ENCODING, BodyDecoder
from ._httpx import HttpxDownloader, HttpxSession
from ._limiter import DomainLimiter, DomainState, domain_of
from ._protocol import Downloader
from ._retry import RetryPolicy, RetrySettings, parse_retry_after
from ._robots import RobotsPolicy, origin_of
from ._settings import DEFAULT_HEADERS, DownloadSettings

__all__ = (
    "ACCEPT_ENCODING",
    "DEFAULT_HEADERS",
    "BodyDecoder",
    "DomainLimiter",
    "DomainState",
    "DownloadSettings",
    "Downloader",
    "HttpxDownloader",
    "HttpxSession",
    "RetryPolicy",
    "RetrySettings",
    "RobotsPolicy",
    "domain_of",
    "origin_of",
    "parse_retry_after",
)
