"""mocra_proxy: a proxy pool."""

from __future__ import annotations

from ._errors import ProxyPoolError

__version__ = "0.1.0"

__all__ = ("ProxyPoolError", "__version__")
