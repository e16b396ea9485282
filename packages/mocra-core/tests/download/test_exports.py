"""The download package's public surface is a decision: pin it."""

from __future__ import annotations

import mocra_core.download as download


def test_all_is_pinned() -> None:
    assert download.__all__ == (
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
    for name in download.__all__:
        assert getattr(download, name) is not None
