"""Secrets at rest: Fernet (MultiFernet for key rotation) when a key is set, tagged plaintext otherwise.

Stored values are ``fernet:<token>`` or ``plain:<text>``. Keys come from the ``key=`` argument or the
``MOCRA_STORE_KEY`` environment variable (comma-separated: the first key encrypts, all decrypt).
``cryptography`` is imported only when a key is set (extra ``mocra-store[encryption]``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from ._errors import SecretKeyError

__all__ = ("KEY_ENV", "Sealer", "SecretKey", "generate_key")

KEY_ENV = "MOCRA_STORE_KEY"
SEALED = "fernet:"
PLAIN = "plain:"
SecretKey = str | bytes | Sequence[str | bytes]
_INSTALL = "encryption needs the 'cryptography' package: pip install 'mocra-store[encryption]'"


def _fernet_module() -> Any:
    try:
        from cryptography import fernet
    except ImportError as exc:  # pragma: no cover - the extra is installed in the workspace
        raise SecretKeyError(_INSTALL) from exc
    return fernet


def generate_key() -> str:
    """A fresh Fernet key (url-safe base64 text) for ``MOCRA_STORE_KEY``.

    >>> len(generate_key())
    44
    """
    key: bytes = _fernet_module().Fernet.generate_key()
    return key.decode("ascii")


def _keys(key: SecretKey | None) -> list[bytes]:
    if key is None:
        key = os.environ.get(KEY_ENV, "")
    if isinstance(key, str | bytes):
        text = key.decode("ascii", "replace") if isinstance(key, bytes) else key
        parts: Sequence[str | bytes] = [part.strip() for part in text.split(",")]
    else:
        parts = key
    return [part.encode("ascii", "replace") if isinstance(part, str) else part for part in parts if part]


class Sealer:
    """Seals and opens credential secrets.

    >>> Sealer(key="").seal("s3cret")
    'plain:s3cret'
    >>> sealer = Sealer(key=generate_key())
    >>> sealer.open(sealer.seal("s3cret"))
    's3cret'
    """

    def __init__(self, key: SecretKey | None = None) -> None:
        keys = _keys(key)
        self._fernet: Any = None
        if keys:
            fernet = _fernet_module()
            try:
                self._fernet = fernet.MultiFernet([fernet.Fernet(k) for k in keys])
            except (ValueError, TypeError):
                raise SecretKeyError(
                    f"the store key (key= or {KEY_ENV}) is not a Fernet key: each key must be 32 url-safe"
                    " base64-encoded bytes; make one with `python -m mocra_store keygen`"
                ) from None

    @property
    def encrypting(self) -> bool:
        """Whether new secrets are encrypted (a key is set)."""
        return self._fernet is not None

    def seal(self, secret: str) -> str:
        """The stored form of ``secret``: encrypted with the first key, or tagged plaintext without one."""
        if self._fernet is None:
            return PLAIN + secret
        token: bytes = self._fernet.encrypt(secret.encode("utf-8"))
        return SEALED + token.decode("ascii")

    def open(self, stored: str, *, what: str = "a secret") -> str:
        """The plaintext of a stored secret; ``what`` names it in errors (never the value)."""
        if stored.startswith(PLAIN):
            return stored[len(PLAIN) :]
        if not stored.startswith(SEALED):
            raise SecretKeyError(f"{what} is stored in an unknown form (neither {SEALED!r} nor {PLAIN!r})")
        if self._fernet is None:
            raise SecretKeyError(f"{what} is encrypted but no key is set: pass key= or set {KEY_ENV}")
        try:
            plain: bytes = self._fernet.decrypt(stored[len(SEALED) :].encode("ascii"))
        except _fernet_module().InvalidToken:
            raise SecretKeyError(f"{what} cannot be decrypted: wrong key?") from None
        return plain.decode("utf-8")

    def reseal(self, stored: str, *, what: str = "a secret") -> str:
        """``stored`` sealed again with the current first key (key rotation, or encrypting old plaintext)."""
        return self.seal(self.open(stored, what=what))
