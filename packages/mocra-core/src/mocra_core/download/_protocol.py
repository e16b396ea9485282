"""`Downloader`: the seam between the engine and whatever fetches a `Request`; `Hop`, its redirect check."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, Self, TypeAlias, runtime_checkable

if TYPE_CHECKING:
    from types import TracebackType

    from ..http import Request, Response

__all__ = ("Downloader", "Hop", "HopCheck", "HopCheckingDownloader", "checks_hops")


@dataclass(frozen=True, slots=True)
class Hop:
    """The next request of a redirect, as the downloader is about to send it.

    `method` and `body` are the ones it will send (a 303, or a 301/302 after a POST, turns it into a
    body-less GET); `status` is the redirect's status (0 when unknown: the engine's after-the-fact check
    of a downloader without the hook).
    """

    url: str
    method: str
    body: bytes | None
    status: int


HopCheck: TypeAlias = Callable[[Hop], Awaitable[str | None]]
"""Asked before each redirect hop is sent: `None` to follow it, or the reason to refuse it."""


@runtime_checkable
class Downloader(Protocol):
    """Fetches one `Request` and returns its `Response`; used as an async context manager.

    Contract:

    - Any HTTP status is a `Response`, 4xx and 5xx included; only a failed exchange raises.
    - Failures raise `DownloadError` or a subclass, with the URL in the message and `.request` set:
      `DownloadTimeout` (connect, read or total time ran out), `BodyTooLarge` (the decoded body passed the
      cap), `TooManyRedirects` (the cap was reached or a loop was found), `UnfetchableURL` (the URL or a
      redirect's `Location` cannot be sent: another scheme, a malformed host), plain `DownloadError` for the
      rest (refused connection, reset, TLS failure, undecodable body). Driver exceptions never escape.
      `DownloadError.retryable` says which of them the engine retries.
    - `download` may be called concurrently from many tasks. Cancelling it abandons the exchange and frees
      its connection; nothing is retried here (that is `RetryPolicy`'s job, in the engine).
    - `aclose` releases the pool; `download` must not be called afterwards. `async with` calls it on exit.

    `name` is the name requests use to pick this downloader (`Request.downloader`).
    """

    name: str

    async def download(self, request: Request) -> Response:
        """Fetch `request`, following redirects, and return the final response."""
        ...

    async def aclose(self) -> None:
        """Release connections and other resources; idempotent."""
        ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


class HopCheckingDownloader(Downloader, Protocol):
    """A `Downloader` that lets its caller check every redirect hop before it is sent.

    Contract (besides `Downloader`'s): before sending each redirect hop, `download` awaits `hop(Hop(...))`
    with the absolute target. `None` follows it; a string stops the download with `HopRefused(url, reason)`
    (the refused hop is not sent). What `hop` raises propagates unchanged (the engine's seen set or
    robots.txt being out of reach is retried by the engine). The time `hop` takes counts towards the
    request's total timeout. Without `hop`, `download` behaves as `Downloader.download`.

    The engine tells such a downloader by its `download` accepting a keyword `hop` (see `checks_hops`);
    for another one it checks only the final `Response.url`, after the fact.
    """

    async def download(self, request: Request, *, hop: HopCheck | None = None) -> Response:
        """Fetch `request`, following redirects that `hop` lets through, and return the final response."""
        ...


def checks_hops(downloader: Downloader) -> bool:
    """Whether `downloader.download` takes a `hop` keyword (implements `HopCheckingDownloader`).

    Example:
        >>> class Plain:
        ...     async def download(self, request): ...
        >>> class Checking:
        ...     async def download(self, request, *, hop=None): ...
        >>> checks_hops(Plain()), checks_hops(Checking())  # type: ignore[arg-type]
        (False, True)
    """
    return _takes_hop(type(downloader))


_BY_KEYWORD = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


@functools.lru_cache(maxsize=64)
def _takes_hop(cls: type) -> bool:
    download = getattr(cls, "download", None)
    if download is None:
        return False
    try:
        parameter = inspect.signature(download).parameters.get("hop")
    except (TypeError, ValueError):  # a callable without a signature
        return False
    return parameter is not None and parameter.kind in _BY_KEYWORD
