"""mocra_store: the multi-tenant model (accounts x platforms x modules) on SQLAlchemy 2, usable alone.

``Store`` is the async repository; ``mocra_store.models`` the tables; ``mocra_store.migrate`` the Alembic
migrations shipped in the package; ``load_tenants`` reads a tenants file.

>>> from mocra_store import Store, StoreError
>>> Store("postgresql://bob:hunter2@db/app")
Store('postgresql://bob:***@db/app', closed, encrypting=False)
"""

from __future__ import annotations

from ._errors import (
    NotFound,
    SecretKeyError,
    StoreError,
    StoreNotMigrated,
    StoreUnavailable,
    TenantsFileError,
)
from ._secrets import KEY_ENV, generate_key
from ._urls import DEFAULT_URL, async_url, redact
from .records import Assignment, Credentials, MiddlewareRef, RunEntry, ScheduleEntry, TenantInfo
from .store import Store
from .tenants_file import check_tenants, load_tenants

__version__ = "0.1.0"

__all__ = (
    "DEFAULT_URL",
    "KEY_ENV",
    "Assignment",
    "Credentials",
    "MiddlewareRef",
    "NotFound",
    "RunEntry",
    "ScheduleEntry",
    "SecretKeyError",
    "Store",
    "StoreError",
    "StoreNotMigrated",
    "StoreUnavailable",
    "TenantInfo",
    "TenantsFileError",
    "__version__",
    "async_url",
    "check_tenants",
    "generate_key",
    "load_tenants",
    "redact",
)
