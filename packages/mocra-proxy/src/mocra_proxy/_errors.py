"""The root error of mocra_proxy; mocra_core maps it into its own tree at the seam."""

from __future__ import annotations

__all__ = ("ProxyPoolError",)


class ProxyPoolError(Exception):
    """Root of every error the proxy pool raises on purpose."""
