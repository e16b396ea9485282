"""The root error of mocra_cluster; mocra_core maps it into its own tree at the seam."""

from __future__ import annotations

__all__ = ("ClusterError",)


class ClusterError(Exception):
    """Root of every error the control plane raises on purpose."""
