"""mocra_proxy: a proxy pool for any asyncio/anyio project (and behind every mocra download)."""

from __future__ import annotations

from ._errors import ProxyPoolError
from ._outcome import Outcome
from ._proxy import SCHEMES, BadProxy, Proxy, Scheme
from ._source import ProxySource

__version__ = "0.1.0"

__all__ = (
    "SCHEMES",
    "BadProxy",
    "Outcome",
    "Proxy",
    "ProxyPoolError",
    "ProxySource",
    "Scheme",
    "__version__",
)
