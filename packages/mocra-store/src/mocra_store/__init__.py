"""mocra_store: a SQLAlchemy multi-tenant model."""

from __future__ import annotations

from ._errors import StoreError

__version__ = "0.1.0"

__all__ = ("StoreError", "__version__")
