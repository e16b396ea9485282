"""The offline demo site crawled by `mocra demo` and by tests (see `mocra._demo._site` for its traps)."""

from __future__ import annotations

from ._api import ApiBook, ApiSummary
from ._site import DemoItem, DemoSite, DemoTraps

__all__ = ("ApiBook", "ApiSummary", "DemoItem", "DemoSite", "DemoTraps")
