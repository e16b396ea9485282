"""What the store hands out: plain frozen values, detached from any database session.

>>> Credentials("alice", "s3cret", {"otp": "123"})
Credentials(username='alice', password='***', extra=<1 key(s)>)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from datetime import datetime

__all__ = ("Assignment", "Credentials", "MiddlewareRef", "RunEntry", "ScheduleEntry", "TenantInfo")


@dataclass(frozen=True, slots=True)
class MiddlewareRef:
    """A middleware a module uses: its name, kind ("download" | "data") and merged config.

    >>> MiddlewareRef("retry", "download", {"tries": 3}).kind
    'download'
    """

    name: str
    kind: str
    config: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Assignment:
    """One (account, platform, module) triple the engine should run, with its merged config.

    ``config`` merges platform < module < account < account×platform < module×platform < module×account;
    ``priority`` is the module×account relation's; ``disabled_by`` names the first disabled thing found.

    >>> Assignment("alice", "shop", "prices", "2", 5, {"pages": 3}).enabled
    True
    """

    account: str
    platform: str
    module: str
    version: str
    priority: int
    config: dict[str, Any]
    enabled: bool = True
    disabled_by: str | None = None
    middlewares: tuple[MiddlewareRef, ...] = ()


@dataclass(frozen=True, slots=True, repr=False)
class Credentials:
    """A decrypted login; the repr shows neither the password nor the extra values.

    >>> str(Credentials("bob", "hunter2"))
    "Credentials(username='bob', password='***', extra=<0 key(s)>)"
    """

    username: str
    password: str
    extra: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"Credentials(username={self.username!r}, password='***', extra=<{len(self.extra)} key(s)>)"


@dataclass(frozen=True, slots=True)
class ScheduleEntry:
    """An enabled schedule: run ``module`` (for ``account`` / on ``platform`` when set) on ``cron``.

    >>> ScheduleEntry("prices", None, None, "0 * * * *").misfire
    60.0
    """

    module: str
    account: str | None
    platform: str | None
    cron: str
    misfire: float = 60.0


@dataclass(frozen=True, slots=True)
class RunEntry:
    """One run's record; ``finished_at`` is None while it runs.

    >>> from datetime import UTC, datetime
    >>> RunEntry("r1", "prices", None, None, "w1", "running", datetime(2024, 1, 1, tzinfo=UTC)).status
    'running'
    """

    run_id: str
    module: str
    account: str | None
    platform: str | None
    worker: str
    status: str
    started_at: datetime
    finished_at: datetime | None = None
    stats: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


@dataclass(frozen=True, slots=True)
class TenantInfo:
    """An account, platform or module as listed by the admin methods (``version`` for modules only).

    >>> TenantInfo("module", "prices", True, {}, "2").version
    '2'
    """

    kind: str
    name: str
    enabled: bool
    config: dict[str, Any]
    version: str | None = None
