"""mocra_cluster: mocra's control plane."""

from __future__ import annotations

from ._errors import ClusterError

__version__ = "0.1.0"

__all__ = ("ClusterError", "__version__")
