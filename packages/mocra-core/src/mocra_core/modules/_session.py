"""`LoginSession`: what a module's login step talks HTTP through; `LoginFailed`: when it cannot."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._errors import MocraError
from ..http import Request

if TYPE_CHECKING:
    from ..download import Downloader
    from ..http import Response
    from ._node import Account

__all__ = ("LoginFailed", "LoginSession")


class LoginFailed(MocraError):
    """A login step failed; the account's requests go to the dead-letter queue with this message.

    Example:
        >>> str(LoginFailed("shop", "alice", "HTTP 401 from /login"))
        "login of account 'alice' in module 'shop' failed: HTTP 401 from /login"
    """

    def __init__(self, module: str, account: str | None, reason: str) -> None:
        who = f"account {account!r}" if account is not None else "the anonymous account"
        super().__init__(f"login of {who} in module {module!r} failed: {reason}")
        self.module = module
        self.account = account
        self.reason = reason


class LoginSession:
    """The account's HTTP session during login: the same cookie jar its crawl requests will use.

    Attributes:
        account: The account logging in (`None` for a module without accounts).
        module: Name of the module.
    """

    def __init__(self, module: str, account: Account | None, downloader: Downloader) -> None:
        self.module = module
        self.account = account
        self._downloader = downloader

    async def send(self, request: Request) -> Response:
        """Send any request through the account's session (redirects followed, cookies kept)."""
        return await self._downloader.download(request)

    async def get(self, url: str, **kwargs: Any) -> Response:
        """GET `url` (keyword arguments as for `Request`)."""
        return await self.send(Request(url, method="GET", **kwargs))

    async def post(self, url: str, **kwargs: Any) -> Response:
        """POST to `url`; pass `form=`, `json=` or `body=` (keyword arguments as for `Request`)."""
        return await self.send(Request(url, method="POST", **kwargs))

    def fail(self, reason: str) -> LoginFailed:
        """Build the error to raise when the site refuses the login.

        Example:
            >>> # raise session.fail(f"HTTP {response.status} from the login form")
        """
        return LoginFailed(self.module, self.account.name if self.account else None, reason)
