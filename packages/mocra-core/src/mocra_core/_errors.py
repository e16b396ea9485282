"""The one exception tree of mocra; callers catch `MocraError`.

```
MocraError
    ConfigError     .key .source   a setting is missing, unknown or of the wrong type
    MissingExtra    .extra         an optional backend was asked for but its extra is not installed
    InvalidURL      .url           a URL that cannot be crawled (no host, unsupported scheme, bad port)
    DownloadError   .request       a request could not be completed
        DownloadTimeout            connect/read/total time ran out
        BodyTooLarge               the (decoded) body passed the configured cap
        TooManyRedirects           the redirect cap was reached or a redirect loop was found
```
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .http import Request

__all__ = (
    "BodyTooLarge",
    "ConfigError",
    "DownloadError",
    "DownloadTimeout",
    "InvalidURL",
    "MissingExtra",
    "MocraError",
    "TooManyRedirects",
)


class MocraError(Exception):
    """Root of every error mocra raises on purpose."""


class ConfigError(MocraError):
    """A setting is missing, unknown or invalid.

    The message names the key, where the value came from and what was expected.

    Example:
        >>> err = ConfigError("queue.url", "unknown scheme 'rediss'", source="mocra.toml")
        >>> str(err)
        "mocra.toml: queue.url: unknown scheme 'rediss'"
    """

    def __init__(self, key: str, problem: str, *, source: str = "<code>") -> None:
        super().__init__(f"{source}: {key}: {problem}")
        self.key = key
        self.source = source


class MissingExtra(MocraError):
    """An optional feature needs an extra that is not installed.

    Example:
        >>> str(MissingExtra("redis", "queue URL 'redis://127.0.0.1'"))
        "queue URL 'redis://127.0.0.1' needs: pip install 'mocra[redis]'"
    """

    def __init__(self, extra: str, what: str) -> None:
        super().__init__(f"{what} needs: pip install 'mocra[{extra}]'")
        self.extra = extra


class InvalidURL(MocraError):
    """A URL cannot be crawled: no host, a scheme other than http/https, or a bad port.

    Example:
        >>> str(InvalidURL("ftp://x", "scheme must be http or https"))
        "invalid URL 'ftp://x': scheme must be http or https"
    """

    def __init__(self, url: str, problem: str) -> None:
        super().__init__(f"invalid URL {url!r}: {problem}")
        self.url = url


class DownloadError(MocraError):
    """A request could not be completed; `request` is the request that failed."""

    def __init__(self, message: str, *, request: Request | None = None) -> None:
        super().__init__(message)
        self.request = request


class DownloadTimeout(DownloadError):
    """The connect, read or total timeout of a request ran out."""


class BodyTooLarge(DownloadError):
    """The response body (after decompression) passed the configured cap."""


class TooManyRedirects(DownloadError):
    """The redirect cap was reached or a redirect loop was detected."""
