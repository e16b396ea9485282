"""mocra_proxy: a proxy pool for any asyncio/anyio project (and behind every mocra download)."""

from __future__ import annotations

from ._errors import ProxyPoolError
from ._file import FileSource
from ._outcome import Outcome
from ._provider import ProviderSource
from ._proxy import SCHEMES, BadProxy, Proxy, Scheme
from ._source import ProxySource
from ._source_errors import ProviderError, SourceError
from ._static import StaticSource
from ._tunnel import TunnelSource

__version__ = "0.1.0"

__all__ = (
    "BadProxy",
    "FileSource",
    "Outcome",
    "ProviderError",
    "ProviderSource",
    "Proxy",
    "ProxyPoolError",
    "ProxySource",
    "SCHEMES",
    "Scheme",
    "SourceError",
    "StaticSource",
    "TunnelSource",
    "__version__",
)
