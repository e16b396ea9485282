"""The download stage: the `Downloader` seam and its implementations, politeness, retries.

Downloaders: `AiohttpDownloader` (the default, aiohttp natively) and `HttpxDownloader` (httpx's model,
over an aiohttp pool or httpx's own) behave alike; `build_downloader` makes the one
`DownloadSettings.transport` names.

Politeness is `DomainLimiter` (per-domain concurrency, delay, adaptive slow-down, in one process),
`GatedLimiter` (the same plus a `DomainGate` ticket, so the limits hold across the workers of a job:
`LmdbDomainGate` on one host, `RedisDomainGate` on many (the `redis` extra); both live in
`mocra_core.backends` and are imported on first use), `ShareLimiter` (a cluster without a gate: each
node keeps to its share of the limits) and `RobotsPolicy` (robots.txt); `RetryPolicy` decides whether
and when a failed download is tried again. A `HopCheckingDownloader` (as both built-in downloaders) lets the
engine check each redirect `Hop` first. `try_acquire` takes a domain's slot without waiting (a `Permit`),
as any `DomainAdmission` does.

Adaptive pace: `AutoscaledConcurrency` (the requests in flight follow the process's CPU, memory and
event-loop headroom, sampled by a `LoadSampler`) and `AutoThrottle` (a per-host delay follows the host's
latency, shared by a job's processes through a `PaceStore`).

Development: `CachedDownloader` answers downloads from an HTTP cache (`HttpCacheSettings`, `[http_cache]`)
and stores what the downloader it wraps fetches.

Proxies: a `ProxyRoute` tells a built-in downloader which proxy each request goes through (a fixed URL, or a
lease from a `ProxyLeaser` such as `mocra_proxy.ProxyPool`, with every outcome reported back).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import load_optional
from ._aiohttp import AiohttpDownloader, AiohttpSession
from ._autoscale import AutoscaledConcurrency, AutoscaleSettings, AutoscaleState
from ._autothrottle import (
    AutoThrottle,
    AutoThrottleSettings,
    HostPace,
    LocalPaceStore,
    PaceStore,
    SharedPaceStore,
)
from ._build import build_downloader
from ._cache import CachedDownloader, NotCached
from ._cache_settings import HttpCacheSettings
from ._decode import ACCEPT_ENCODING, BodyDecoder
from ._gate import DomainGate, Ticket
from ._gate_limiter import GatedLimiter
from ._httpx import HttpxDownloader, HttpxSession
from ._limiter import DomainLimiter, DomainState, domain_of
from ._load_sampler import LoadSample, LoadSampler
from ._permit import DomainAdmission, Permit
from ._protocol import Downloader, Hop, HopCheck, HopCheckingDownloader, checks_hops
from ._proxy_route import PoolRoute, ProxyAddress, ProxyLease, ProxyLeaser, ProxyRoute
from ._retry import RetryPolicy, RetrySettings, parse_retry_after
from ._robots import RobotsPolicy, origin_of
from ._settings import DEFAULT_HEADERS, DownloadSettings
from ._share_limiter import ShareLimiter

if TYPE_CHECKING:
    from ..backends.lmdb._gate import LmdbDomainGate
    from ..backends.redis._gate import RedisDomainGate

__all__ = (
    "ACCEPT_ENCODING",
    "DEFAULT_HEADERS",
    "AiohttpDownloader",
    "AiohttpSession",
    "AutoThrottle",
    "AutoThrottleSettings",
    "AutoscaleSettings",
    "AutoscaleState",
    "AutoscaledConcurrency",
    "BodyDecoder",
    "CachedDownloader",
    "DomainAdmission",
    "DomainGate",
    "DomainLimiter",
    "DomainState",
    "DownloadSettings",
    "Downloader",
    "GatedLimiter",
    "Hop",
    "HopCheck",
    "HopCheckingDownloader",
    "HostPace",
    "HttpCacheSettings",
    "HttpxDownloader",
    "HttpxSession",
    "LmdbDomainGate",
    "LoadSample",
    "LoadSampler",
    "LocalPaceStore",
    "NotCached",
    "PaceStore",
    "Permit",
    "PoolRoute",
    "ProxyAddress",
    "ProxyLease",
    "ProxyLeaser",
    "ProxyRoute",
    "RedisDomainGate",
    "RetryPolicy",
    "RetrySettings",
    "RobotsPolicy",
    "ShareLimiter",
    "SharedPaceStore",
    "Ticket",
    "build_downloader",
    "checks_hops",
    "domain_of",
    "origin_of",
    "parse_retry_after",
)


_LAZY = {  # name -> (module, extra, the package the extra installs; "" for none)
    "LmdbDomainGate": ("..backends.lmdb._gate", "", ""),
    "RedisDomainGate": ("..backends.redis._gate", "redis", "redis"),
}


def __getattr__(name: str) -> object:
    """Import a `DomainGate` on first use: the package works without the `redis` extra, imports no driver."""
    return load_optional(__name__, _LAZY, name)


if TYPE_CHECKING:  # mypy --strict proves that the gates fit the protocol

    def _fits(lmdb: LmdbDomainGate, redis: RedisDomainGate) -> tuple[DomainGate, DomainGate]:
        return lmdb, redis
