"""`AccessGuard`: the ASGI middleware that lets a request in, or answers 401, 403 or 429 itself.

Writes (any method but GET, HEAD and OPTIONS) need a configured key; reads need one with `admin.read_keys`,
except the probes (`/health`, `/ready`) and the dashboard page and assets (the page asks for the key).
Each key has its own token bucket; requests with a wrong key share one per client address.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from starlette.datastructures import Headers

from ._json import error_response
from ._keys import KeyRing, presented_key
from ._rate import RateLimiter

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

    from ..config import AdminSettings

__all__ = ("AccessGuard", "is_open")

_OPEN = frozenset({"/health", "/ready", "/", "/index.html", "/favicon.ico"})
_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def is_open(path: str) -> bool:
    """Whether `path` is answered without a key whatever the settings (probes, the dashboard's files).

    Example:
        >>> is_open("/health"), is_open("/static/app.js"), is_open("/api/v1/jobs")
        (True, True, False)
    """
    return path in _OPEN or path.startswith("/static/")


class AccessGuard:
    """Checks the key and the rate of each HTTP request before `app` sees it."""

    def __init__(self, app: ASGIApp, *, settings: AdminSettings, keys: KeyRing | None = None) -> None:
        self._app = app
        self._read_keys = settings.read_keys
        self._keys = keys if keys is not None else KeyRing.from_settings(settings)
        self._limiter = RateLimiter(settings.rate, settings.burst)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        refusal = self._refusal(scope)
        if refusal is None:
            await self._app(scope, receive, send)
            return
        status, message, headers = refusal
        await error_response(status, message, headers)(scope, receive, send)

    def _refusal(self, scope: Scope) -> tuple[int, str, dict[str, str]] | None:
        """Why the request is refused (status, message, headers), or None to let it in."""
        write = scope["method"] not in _READ_METHODS
        if not write and (not self._read_keys or is_open(scope["path"])):
            return None
        if not self._keys.configured:
            what = "writes" if write else "reads (admin.read_keys)"
            return 403, f"{what} need an API key: set admin.keys or MOCRA_ADMIN_KEYS", {}
        key = presented_key(Headers(scope=scope))
        if key is None:
            return 401, "an API key is needed: send Authorization: Bearer <key> or X-API-Key: <key>", {}
        index = self._keys.match(key)
        client = scope.get("client")
        caller = f"key {index}" if index is not None else f"client {client[0] if client else '?'}"
        wait = self._limiter.take(caller)
        if wait > 0:
            retry = str(max(1, math.ceil(wait)))
            limit = f"{self._limiter.rate:g}"
            return 429, f"too many requests: at most {limit} a second per key", {"Retry-After": retry}
        if index is None:
            return 401, "wrong API key", {}
        return None
