"""Middlewares: download (requests and responses), data (items), storage (batches before a sink)."""

from __future__ import annotations

from ._chain import MiddlewareChain
from ._protocols import DataMiddleware, DownloadMiddleware, StorageMiddleware

__all__ = ("DataMiddleware", "DownloadMiddleware", "MiddlewareChain", "StorageMiddleware")
