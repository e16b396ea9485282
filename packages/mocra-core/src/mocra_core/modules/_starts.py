"""`Start` and `CronEntry`: the runs a module begins, at the start of a crawl or on a schedule.

A module's starts come from its code (one per account, or one anonymous) or from a metadata source such as
a store (one per enabled account × platform row, with its merged config); see `mocra_core.metadata`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from ._node import Account

__all__ = ("CronEntry", "Start", "code_starts")


@dataclass(frozen=True, slots=True)
class Start:
    """One run a module begins: for which account, with which meta (the start task's).

    Attributes:
        account: The engine's account name (`Account.name`), `None` for an anonymous run.
        meta: The start task's meta: the module's `config`, merged under a store row's config.
        tenant: The account's name in the metadata source (a store's account; the same as `account` for
            accounts in code).
        platform: The platform of a store row; `None` for code.
        priority: Higher starts are queued first.

    Example:
        >>> Start("alice@shop", {"pages": 3}, tenant="alice", platform="shop").platform
        'shop'
    """

    account: str | None
    meta: Mapping[str, Any] = field(default_factory=dict)
    tenant: str | None = None
    platform: str | None = None
    priority: int = 0


@dataclass(frozen=True, slots=True)
class CronEntry:
    """A schedule of a module: `starts` begin again at every time `cron` names.

    Example:
        >>> CronEntry("0 * * * *", 60.0, (Start(None),)).cron
        '0 * * * *'
    """

    cron: str
    misfire: float
    starts: tuple[Start, ...]


def code_starts(
    accounts: Sequence[Account], config: Mapping[str, Any], cron: str | None, misfire: float
) -> tuple[tuple[Start, ...], tuple[CronEntry, ...]]:
    """The starts of a module as its code declares them: `(at the crawl's start, on its cron)`.

    Example:
        >>> code_starts((), {"k": 1}, None, 60.0)
        ((Start(account=None, meta={'k': 1}, tenant=None, platform=None, priority=0),), ())
    """
    starts = tuple(Start(a.name, dict(config), tenant=a.name) for a in accounts)
    starts = starts or (Start(None, dict(config)),)
    if cron is None:
        return starts, ()
    return (), (CronEntry(cron, misfire, starts),)
