"""`Fetched`: what one exchange brought back, before it becomes a `Response`."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import httpx

__all__ = ("Fetched",)


class Fetched(NamedTuple):
    """The final URL, status, headers and decoded body of one exchange (redirects followed)."""

    url: str
    status: int
    headers: httpx.Headers
    body: bytes
