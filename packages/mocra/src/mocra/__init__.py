"""mocra: queue-driven web crawling that runs on one process or a cluster, unchanged."""

from __future__ import annotations

from mocra_core import ConfigError, MissingExtra, MocraError

__version__ = "0.1.0"

__all__ = ("ConfigError", "MissingExtra", "MocraError", "__version__")
