"""The root error of mocra_dag; mocra_core maps it into its own tree at the seam."""

from __future__ import annotations

__all__ = ("DagError",)


class DagError(Exception):
    """Root of every error the DAG engine raises on purpose."""
