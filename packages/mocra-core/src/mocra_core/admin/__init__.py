"""The admin HTTP server (`mocra[dashboard]`): probes, `/metrics`, the `/api/v1` JSON API and the dashboard.

`mocra run --api ADDR`, `Mocra.builder().api(ADDR)` and `mocra serve` start it; it answers for the jobs of
its node (reads go through each job's shared state, so any worker answers for the whole job). Writes need
an API key (`[admin] keys`); see `AdminSettings`.
"""

from __future__ import annotations

from .._errors import MissingExtra

try:
    import starlette  # noqa: F401
    import uvicorn  # noqa: F401
except ModuleNotFoundError as exc:  # pragma: no cover - without the extra
    raise MissingExtra("dashboard", "the admin API and dashboard") from exc

from ._app import admin_app
from ._context import AdminContext, JobsSource, JobStarter, StartRequest
from ._keys import KEYS_ENV, KeyRing, presented_key
from ._node import JobNode
from ._rate import RateLimiter
from ._server import DEFAULT_ADDRESS, AdminServer, parse_address, serving

__all__ = (
    "DEFAULT_ADDRESS",
    "KEYS_ENV",
    "AdminContext",
    "AdminServer",
    "JobNode",
    "JobStarter",
    "JobsSource",
    "KeyRing",
    "RateLimiter",
    "StartRequest",
    "admin_app",
    "parse_address",
    "presented_key",
    "serving",
)
