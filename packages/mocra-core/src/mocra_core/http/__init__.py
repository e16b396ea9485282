"""The HTTP model: `Request`, `Response`, the `Routing` beside them, selectors, URLs and fingerprints."""

from __future__ import annotations

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
