"""The one exception tree of mocra; callers catch `MocraError`.

```
MocraError
    ConfigError     .key .source   a setting is missing, unknown or of the wrong type
    MissingExtra    .extra         an optional backend was asked for but its extra is not installed
    InvalidURL      .url           a URL that cannot be crawled (no host, unsupported scheme, bad port)
    DownloadError   .request .retryable  a request could not be completed (retried: network, reset, ...)
        DownloadTimeout            connect/read/total time ran out (retried)
        BodyTooLarge               the (decoded) body passed the configured cap (not retried)
        TooManyRedirects           the redirect cap was reached or a loop was found (not retried)
        UnfetchableURL  .url       the URL or a redirect's Location cannot be sent (not retried)
        HopRefused  .url .reason   a redirect hop was refused (duplicate, robots): a drop, not a failure
    BackendError    .backend .url  a queue or coordination backend failed (credentials redacted in .url)
        BackendUnavailable         it cannot be reached (at start: names the URL; mid-run: after retries)
    PoisonMessage   .reason        a message cannot be decoded; it goes to the dead-letter queue
```
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .http import Request

__all__ = (
    "BackendError",
    "BackendUnavailable",
    "BodyTooLarge",
    "ConfigError",
    "DownloadError",
    "DownloadTimeout",
    "HopRefused",
    "InvalidURL",
    "MissingExtra",
    "MocraError",
    "PoisonMessage",
    "TooManyRedirects",
    "UnfetchableURL",
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
    """A request could not be completed; `request` is the request that failed.

    `retryable` says whether another attempt could succeed: true for what may pass (a reset connection, a
    refused one, a timeout, a corrupt transfer), false for the subclasses that mark a request which would
    fail the same way every time. This class attribute is the one place that decides; `RetryPolicy` reads it.

    `received` is the number of body bytes received before the failure, counted as `len(Response.body)`
    counts them for a complete response (after decoding): the stats' bytes received add it, so a body cut
    at the cap is counted too. 0 when no body was read.

    Example:
        >>> DownloadError("connection reset").retryable, BodyTooLarge("over the cap").retryable
        (True, False)
        >>> BodyTooLarge("over the cap", received=1200).received
        1200
    """

    retryable: bool = True

    def __init__(self, message: str, *, request: Request | None = None, received: int = 0) -> None:
        super().__init__(message)
        self.request = request
        self.received = received


class DownloadTimeout(DownloadError):
    """The connect, read or total timeout of a request ran out."""


class BodyTooLarge(DownloadError):
    """The response body (after decompression) passed the configured cap; not retried."""

    retryable = False


class TooManyRedirects(DownloadError):
    """The redirect cap was reached or a redirect loop was detected; not retried."""

    retryable = False


class UnfetchableURL(DownloadError):
    """The URL to send cannot be sent: the request's own or a redirect's `Location`; not retried.

    A redirect to another scheme (`file://`, `ftp://`), a `Location` that is no URL, or a host name httpx
    refuses (an invalid IDNA label) fail the same way on every attempt. `url` is the URL that was refused.

    Example:
        >>> err = UnfetchableURL("ftp://x/", "http://a/ redirected to 'ftp://x/', not an http(s) URL")
        >>> err.url, err.retryable
        ('ftp://x/', False)
    """

    retryable = False

    def __init__(self, url: str, message: str, *, request: Request | None = None) -> None:
        super().__init__(message, request=request)
        self.url = url


def redact(url: str) -> str:
    """`url` with any password replaced by `***` (for messages and logs).

    Example:
        >>> redact("redis://user:secret@127.0.0.1:6379/0")
        'redis://user:***@127.0.0.1:6379/0'
    """
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest:
        return url
    userinfo, _, host = rest.rpartition("@")
    user, colon, _ = userinfo.partition(":")
    return f"{scheme}://{user}{':***' if colon else ''}@{host}"


class HopRefused(DownloadError):
    """A redirect hop was refused by the caller's hop check; the download stops there, on purpose.

    `reason` is why (`"duplicate"`: the target was already seen; `"robots"`: robots.txt disallows it;
    `"offsite"`: the target is out of the crawl's scope), the
    engine counts the request as dropped for that reason (not an error, not a dead letter). `url` is the
    refused target. A downloader that checks hops raises it from `download(request, hop=...)`; the engine
    raises it too when it finds a downloader without the hook landed on a refused URL (`received` then
    counts the body it fetched).

    Example:
        >>> err = HopRefused("http://a/book/12", "duplicate")
        >>> err.url, err.reason, err.retryable
        ('http://a/book/12', 'duplicate', False)
    """

    retryable = False

    def __init__(self, url: str, reason: str, *, request: Request | None = None, received: int = 0) -> None:
        where = f"{request.url} redirected to {url}" if request is not None else f"a redirect to {url}"
        super().__init__(f"{where}: refused ({reason})", request=request, received=received)
        self.url = url
        self.reason = reason


class BackendError(MocraError):
    """A queue or coordination backend failed; `url` has its password redacted.

    Example:
        >>> str(BackendError("redis", "redis://:pw@127.0.0.1:6379", "READONLY replica"))
        "redis backend at 'redis://:***@127.0.0.1:6379': READONLY replica"
    """

    def __init__(self, backend: str, url: str, problem: str) -> None:
        self.backend = backend
        self.url = redact(url)
        super().__init__(f"{backend} backend at {self.url!r}: {problem}")


class BackendUnavailable(BackendError):
    """A backend cannot be reached (refused, timed out, DNS)."""


class PoisonMessage(MocraError):
    """A message that cannot be decoded; it is dead-lettered with `reason` and never crashes a worker."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
