"""Errors of the proxy sources.

```text
ProxyPoolError
    SourceError .source        a source could not give its proxies (file missing, unreadable)
        ProviderError          an HTTP provider failed: status, timeout, connection, bad body
```
"""

from __future__ import annotations

from ._errors import ProxyPoolError

__all__ = ("ProviderError", "SourceError")


class SourceError(ProxyPoolError):
    """A source could not give its proxies; the message names the source (credentials redacted)."""

    def __init__(self, source: str, problem: str) -> None:
        super().__init__(f"proxy source {source!r}: {problem}")
        self.source = source


class ProviderError(SourceError):
    """An HTTP provider failed (status, timeout, connection, body); names the provider without secrets."""
