"""mocra_proxy: a proxy pool for any asyncio/anyio project (and behind every mocra download)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

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
from ._policy import RandomPolicy, RoundRobinPolicy, SamplingPolicy, ScorePolicy, SelectionPolicy
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
from ._state_error import StateError
from ._static import StaticSource
from ._tiers import DomainTier, Tiers
from ._tunnel import TunnelSource

if TYPE_CHECKING:
    from ._redis_state import RedisState

__version__ = "0.1.0"

_LAZY = {"RedisState": "._redis_state"}  # kept out of `import mocra_proxy`: its extra may be missing

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
    "RedisState",
    "RoundRobinPolicy",
    "RoundRobinPolicyConfig",
    "SCHEMES",
    "Scheme",
    "ScorePolicy",
    "ScorePolicyConfig",
    "SamplingPolicy",
    "SelectionPolicy",
    "SourceConfig",
    "SourceError",
    "StateError",
    "StaticSource",
    "StaticSourceConfig",
    "Tiers",
    "TunnelSource",
    "TunnelSourceConfig",
    "__version__",
    "aiohttp_proxy_kwargs",
)


def __getattr__(name: str) -> object:
    """Import the names of `_LAZY` on first use (redis-py is imported only when a `RedisState` is made)."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    found: object = getattr(importlib.import_module(_LAZY[name], __name__), name)
    globals()[name] = found
    return found
