"""API keys: where a request carries one, and a constant-time check against every configured key."""

from __future__ import annotations

import hmac
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from ..config import AdminSettings

__all__ = ("KEYS_ENV", "KeyRing", "presented_key")

KEYS_ENV = "MOCRA_ADMIN_KEYS"
"""The environment variable adding API keys (comma-separated) to `admin.keys`."""


def presented_key(headers: Mapping[str, str]) -> str | None:
    """The key a request carries: `Authorization: Bearer <key>`, else `X-API-Key: <key>`, else None.

    `headers` is looked up with lower-case names (Starlette's `Headers` does so for any case).

    Example:
        >>> presented_key({"authorization": "Bearer s3cret"}), presented_key({"x-api-key": "k"})
        ('s3cret', 'k')
        >>> presented_key({"authorization": "Basic dTpw"}) is None
        True
    """
    scheme, _, token = headers.get("authorization", "").strip().partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    key = headers.get("x-api-key", "").strip()
    return key or None


class KeyRing:
    """The configured API keys; `match` compares a presented key with each in constant time.

    Example:
        >>> ring = KeyRing(["alpha", "beta"])
        >>> ring.match("beta"), ring.match("gamma"), ring.configured
        (1, None, True)
    """

    def __init__(self, keys: Iterable[str]) -> None:
        self._keys = tuple(dict.fromkeys(key.encode() for key in keys if key))

    @classmethod
    def from_settings(cls, settings: AdminSettings, environ: Mapping[str, str] | None = None) -> KeyRing:
        """The keys of `admin.keys` plus those of `MOCRA_ADMIN_KEYS` (comma-separated).

        Example:
            >>> from mocra_core.config import AdminSettings
            >>> len(KeyRing.from_settings(AdminSettings(keys=["a"]), {"MOCRA_ADMIN_KEYS": "b, c,"}))
            3
        """
        env = os.environ if environ is None else environ
        extra = [part.strip() for part in env.get(KEYS_ENV, "").split(",")]
        return cls([*settings.keys, *extra])

    def __len__(self) -> int:
        return len(self._keys)

    @property
    def configured(self) -> bool:
        """Whether there is any key (without one, every write is refused)."""
        return bool(self._keys)

    def match(self, presented: str) -> int | None:
        """The index of the key equal to `presented`, or None; every key is compared, in constant time."""
        candidate = presented.encode()
        found: int | None = None
        for index, key in enumerate(self._keys):
            if hmac.compare_digest(candidate, key) and found is None:
                found = index
        return found
