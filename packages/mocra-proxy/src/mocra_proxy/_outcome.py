"""`Outcome`: what happened when a proxy was used, as reported back to the pool."""

from __future__ import annotations

import msgspec

__all__ = ("BAN_STATUSES", "Outcome")

BAN_STATUSES: frozenset[int] = frozenset({403, 407, 429})
"""The statuses a `ProxyPool` treats as bans unless told otherwise (`ProxyPool.ban_statuses`)."""


class Outcome(msgspec.Struct, frozen=True, kw_only=True):
    """The result of one use of a proxy.

    Attributes:
        ok: The request got an answer the caller accepts (not a ban, not a proxy error).
        status: The HTTP status, if an answer came (`None` for a connect error or timeout).
        latency: Seconds from sending to the answer (or to the failure).
        error: The exception's class name for a failure (`"ConnectError"`, `"ProxyError"`), else `None`.

    Example:
        >>> Outcome(ok=True, status=200, latency=0.12)
        Outcome(ok=True, status=200, latency=0.12, error=None)
    """

    ok: bool
    status: int | None = None
    latency: float = 0.0
    error: str | None = None
