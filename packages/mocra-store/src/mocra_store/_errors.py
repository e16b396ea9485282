"""The root error of mocra_store; mocra_core maps it into its own tree at the seam."""

from __future__ import annotations

__all__ = ("StoreError",)


class StoreError(Exception):
    """Root of every error the store raises on purpose."""
