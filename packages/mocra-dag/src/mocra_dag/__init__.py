"""mocra_dag: a generic DAG engine."""

from __future__ import annotations

from ._errors import DagError

__version__ = "0.1.0"

__all__ = ("DagError", "__version__")
