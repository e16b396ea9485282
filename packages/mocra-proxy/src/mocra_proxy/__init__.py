"""mocra_proxy: a proxy pool for any asyncio/anyio project (and behind every mocra download)."""

from __future__ import annotations

from ._aiohttp_client import ProxiedAiohttp, aiohttp_proxy_kwargs
from ._config import (
    PoolOptions,
    ProxyConfigError,
    ProxyPoolConfig,
    RandomPolicyConfig,
    RoundRobinPolicyConfig,
    ScorePolicyConfig,
)
from ._errors import ProxyPoolError
from ._file import FileSource
from ._health import ProxyHealth
from ._httpx_client import ProxiedHttpx
from ._lease import Lease, LeaseContext
from ._limits import Limits
from ._outcome import Outcome
from ._policy import RandomPolicy, RoundRobinPolicy, ScorePolicy, SelectionPolicy
from ._pool import ProxyPool
from ._pool_view import NoProxyAvailable, PoolStats
from ._probe import HealthCheck
from ._provider import ProviderSource
from ._proxy import SCHEMES, BadProxy, Proxy, Scheme
from ._source import ProxySource
from ._source_config import (
    FileSourceConfig,
    ProviderSourceConfig,
    SourceConfig,
    StaticSourceConfig,
    TunnelSourceConfig,
)
from ._source_errors import ProviderError, SourceError
from ._state import MemoryState, PoolState
from ._static import StaticSource
from ._tiers import DomainTier, Tiers
from ._tunnel import TunnelSource

__version__ = "0.1.0"

__all__ = (
    "BadProxy",
    "DomainTier",
    "FileSource",
    "FileSourceConfig",
    "HealthCheck",
    "Lease",
    "LeaseContext",
    "Limits",
    "MemoryState",
    "NoProxyAvailable",
    "Outcome",
    "PoolOptions",
    "PoolState",
    "PoolStats",
    "ProviderError",
    "ProviderSource",
    "ProviderSourceConfig",
    "ProxiedAiohttp",
    "ProxiedHttpx",
    "Proxy",
    "ProxyConfigError",
    "ProxyHealth",
    "ProxyPool",
    "ProxyPoolConfig",
    "ProxyPoolError",
    "ProxySource",
    "RandomPolicy",
    "RandomPolicyConfig",
    "RoundRobinPolicy",
    "RoundRobinPolicyConfig",
    "SCHEMES",
    "Scheme",
    "ScorePolicy",
    "ScorePolicyConfig",
    "SelectionPolicy",
    "SourceConfig",
    "SourceError",
    "StaticSource",
    "StaticSourceConfig",
    "Tiers",
    "TunnelSource",
    "TunnelSourceConfig",
    "__version__",
    "aiohttp_proxy_kwargs",
)
