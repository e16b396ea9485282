"""The HTTP model: `Request`, `Response`, selectors, URL canonicalisation and fingerprints."""

from __future__ import annotations

from ._request import Request, RequestRecord
from ._response import Response, ResponseRecord
from ._selector import Node
from ._url import canonicalize_url, fingerprint

__all__ = (
    "Node",
    "Request",
    "RequestRecord",
    "Response",
    "ResponseRecord",
    "canonicalize_url",
    "fingerprint",
)
