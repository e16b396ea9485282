"""`LoginManager`: one login per (module, account), shared by all of its requests, with re-login."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import anyio

from ...modules import Login, LoginFailed, LoginSession

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ...download import Downloader
    from ...http import Request
    from ...modules import Account, CompiledModule

__all__ = ("LoginManager",)

logger = logging.getLogger(__name__)

MAX_RELOGINS = 3


class _Account:
    __slots__ = ("error", "generation", "lock", "login", "relogins")

    def __init__(self) -> None:
        self.lock = anyio.Lock()
        self.login: Login | None = None
        self.error: LoginFailed | None = None
        self.generation = 0
        self.relogins = 0


class LoginManager:
    """Gives each request the session of its account, logging the account in first if the module needs it.

    The first request of an account runs the module's `login` (others wait on the same lock); its result
    and the session's cookie jar serve every later request of the account. A failed login is remembered:
    the account's requests fail fast with the same `LoginFailed`. `invalidate` (after a 401/403 when the
    module asks for re-login) makes the next request log in again, at most `MAX_RELOGINS` times.
    """

    def __init__(self, downloaders: Mapping[str, Downloader]) -> None:
        self._downloaders = downloaders
        self._accounts: dict[str, _Account] = {}

    def downloader_for(
        self, module: CompiledModule, request: Request, account: str | None
    ) -> Downloader | None:
        """The downloader (`account`'s session, when the module has accounts or a login) for `request`."""
        base = self._downloaders.get(request.downloader or "default")
        if base is None or (module.login is None and not module.accounts):
            return base
        session = getattr(base, "session", None)
        return session(_key(module, account)) if callable(session) else base

    async def prepare(
        self, module: CompiledModule, request: Request, account: str | None, downloader: Downloader
    ) -> int:
        """Log `account` (the request's) in if needed and add its login headers and cookies to `request`.

        Returns:
            The login generation used (pass it to `invalidate`).

        Raises:
            LoginFailed: the account's login failed (now or earlier in the run).
        """
        if module.login is None:
            return 0
        state = self._accounts.setdefault(_key(module, account), _Account())
        if state.login is None and state.error is None:
            async with state.lock:
                if state.login is None and state.error is None:
                    await self._login(module, account, downloader, state)
        if state.error is not None:
            raise state.error
        assert state.login is not None
        if state.login.headers:
            request.headers = {**state.login.headers, **request.headers}
        if state.login.cookies:
            request.cookies = {**state.login.cookies, **request.cookies}
        return state.generation

    def invalidate(self, module: CompiledModule, account: str | None, generation: int) -> bool:
        """Forget the login of generation `generation`; False once the re-login budget is spent."""
        state = self._accounts.get(_key(module, account))
        if state is None or state.relogins >= MAX_RELOGINS:
            return False
        if state.generation == generation and state.login is not None:
            state.login = None
            state.relogins += 1
            logger.info("logging %s/%s in again", module.name, account or "-")
        return True

    async def _login(
        self, module: CompiledModule, account_name: str | None, downloader: Downloader, state: _Account
    ) -> None:
        assert module.login is not None
        account = _find(module.accounts, account_name)
        session = LoginSession(module.name, account, downloader)
        try:
            result = await module.login(session)
        except LoginFailed as exc:
            state.error = exc
        except Exception as exc:  # a bug or a network error in the login step: same outcome, clear message
            state.error = LoginFailed(module.name, account_name, f"{type(exc).__name__}: {exc}")
        else:
            state.login = result if result is not None else Login()
            state.generation += 1
            logger.info("logged in %s/%s", module.name, account_name or "-")
            return
        logger.error("%s", state.error)


def _key(module: CompiledModule, account: str | None) -> str:
    return f"{module.name}:{account or '-'}"


def _find(accounts: tuple[Account, ...], name: str | None) -> Account | None:
    for account in accounts:
        if account.name == name:
            return account
    return None
