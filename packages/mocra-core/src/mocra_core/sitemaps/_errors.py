"""`SitemapError`: a sitemap that cannot be read, naming its URL and the problem."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._errors import MocraError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ._entries import SitemapEntry

__all__ = ("SitemapError",)


class SitemapError(MocraError):
    """A sitemap is malformed, truncated, too large or refused (entity declarations).

    `entries` holds what the failing call had parsed before the problem (the entries of earlier calls were
    returned by them), so a caller can deliver them before reporting the failure. `status` is the HTTP
    status when the server refused the sitemap (`read_sitemap`), else `None`; `is_retryable` says whether
    trying again later may succeed (a 5xx, 408 or 429 status).

    Example:
        >>> err = SitemapError("https://example.com/sitemap.xml", "not well-formed (invalid token): line 3")
        >>> str(err)
        "sitemap 'https://example.com/sitemap.xml': not well-formed (invalid token): line 3"
        >>> err.problem
        'not well-formed (invalid token): line 3'
    """

    def __init__(
        self, url: str, problem: str, *, entries: Sequence[SitemapEntry] = (), status: int | None = None
    ) -> None:
        super().__init__(f"sitemap {url!r}: {problem}")
        self.url = url
        self.problem = problem
        self.entries = tuple(entries)
        self.status = status

    @property
    def is_retryable(self) -> bool:
        """Whether the server refused it for now (a 5xx, 408 or 429 status): trying later may succeed."""
        return self.status is not None and (self.status >= 500 or self.status in (408, 429))
