"""The HTTP model: `Request`, `Response`, the `Routing` beside them, selectors, URLs and fingerprints."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import load_optional
from ._request import Request, RequestRecord
from ._response import Response, ResponseRecord
from ._route import Routed, RoutedRecord, Routing
from ._selector import Node
from ._url import canonicalize_url, fingerprint

__all__ = (
    "Node",
    "Request",
    "RequestRecord",
    "Response",
    "ResponseRecord",
    "Routed",
    "RoutedRecord",
    "Routing",
    "canonicalize_url",
    "fingerprint",
)

if TYPE_CHECKING:
    from ._xpath import XNode as XNode  # lazy: see __getattr__

_LAZY = {"XNode": ("._xpath", "xpath", "lxml")}


def __getattr__(name: str) -> object:
    """`XNode` (an element `Response.xpath` selected), imported when first named: needs the `xpath` extra."""
    return load_optional(__name__, _LAZY, name)
