"""`Downloader`: the seam between the engine and whatever fetches a `Request`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, Self, runtime_checkable

if TYPE_CHECKING:
    from types import TracebackType

    from ..http import Request, Response

__all__ = ("Downloader",)


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
