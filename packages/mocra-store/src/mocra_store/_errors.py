"""The errors mocra_store raises on purpose; mocra_core maps StoreError into its own tree at the seam.

No message ever carries a secret: URLs are redacted and decrypted values are never formatted.
"""

from __future__ import annotations

__all__ = (
    "NotFound",
    "SecretKeyError",
    "StoreError",
    "StoreNotMigrated",
    "StoreUnavailable",
    "TenantsFileError",
)


class StoreError(Exception):
    """Root of every error the store raises on purpose."""


class StoreUnavailable(StoreError):
    """The database cannot be reached; the message names the (redacted) URL and the driver's reason."""


class StoreNotMigrated(StoreError):
    """The database schema is not at the revision this mocra-store needs."""


class TenantsFileError(StoreError, ValueError):
    """A tenants file or mapping is malformed; the message names the file and the key path."""


class SecretKeyError(StoreError):
    """A secret cannot be encrypted or decrypted: no key, a wrong key or a malformed key."""


class NotFound(StoreError, LookupError):
    """An account, platform, module or run of that name does not exist."""
