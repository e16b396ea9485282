"""`[admin]`: the admin HTTP server's keys, read protection, rate limit and CORS."""

from __future__ import annotations

import msgspec

from .._bounds import at_least, positive

__all__ = ("AdminSettings",)


class AdminSettings(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """The admin HTTP server (`mocra run --api`, `mocra serve`, `builder.api()`): who may do what, how often.

    Attributes:
        keys: API keys. Every write (pause, resume, stop, replay, start a job) needs one, sent as
            `Authorization: Bearer <key>` or `X-API-Key: <key>` and compared in constant time with each.
            The variable `MOCRA_ADMIN_KEYS` (comma-separated) adds keys. None configured: writes answer 403.
        read_keys: Reads need a key too (`/api/v1/...`, `/metrics`); `/health`, `/ready` and the dashboard
            page and its assets stay open (the page asks for the key).
        rate: Requests per second each key may make (a token bucket; over it: 429 with `Retry-After`).
            Requests with a wrong key are limited the same way per client address.
        burst: Requests a key may make at once before `rate` paces it (the bucket's size).
        cors_origins: Origins a browser may call the API from (`["https://ops.example.com"]`, `["*"]`);
            empty: no CORS headers at all.

    Example:
        >>> AdminSettings(keys=["s3cret"], rate=5).rate
        5
        >>> AdminSettings(rate=0)
        Traceback (most recent call last):
        ...
        ValueError: rate: must be > 0, got 0
    """

    keys: list[str] = []
    read_keys: bool = False
    rate: float = 10.0
    burst: int = 20
    cors_origins: list[str] = []

    def __post_init__(self) -> None:
        positive(self, "rate")
        at_least(self, 1, "burst")
        for key in self.keys:
            if not key.strip():
                raise ValueError("keys: an empty key would let anyone in; remove it")
