"""The engine's reads: assignments with merged config, credentials, schedules (one session each)."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.orm import aliased

from ._merge import deep_merge
from .models import (
    Account,
    AccountPlatform,
    Credential,
    Middleware,
    Module,
    ModuleAccount,
    ModuleMiddleware,
    ModulePlatform,
    Platform,
    Schedule,
)
from .records import Assignment, Credentials, MiddlewareRef, ScheduleEntry

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from ._secrets import Sealer

__all__ = ("read_assignments", "read_credentials", "read_schedules")


async def _middlewares(session: AsyncSession) -> dict[int, tuple[MiddlewareRef, ...]]:
    rows = await session.execute(
        select(ModuleMiddleware, Middleware)
        .join(Middleware, ModuleMiddleware.middleware_id == Middleware.id)
        .where(ModuleMiddleware.enabled, Middleware.enabled)
        .order_by(ModuleMiddleware.position, Middleware.name)
    )
    found: dict[int, list[MiddlewareRef]] = defaultdict(list)
    for use, middleware in rows:
        config = deep_merge(middleware.config, use.config)
        found[use.module_id].append(MiddlewareRef(middleware.name, middleware.kind, config))
    return {module_id: tuple(refs) for module_id, refs in found.items()}


async def read_assignments(session: AsyncSession, *, include_disabled: bool) -> list[Assignment]:
    """Every (account, platform, module) joined by all three relations; see ``Store.assignments``."""
    accounts = {row.id: row for row in await session.scalars(select(Account))}
    platforms = {row.id: row for row in await session.scalars(select(Platform))}
    modules = {row.id: row for row in await session.scalars(select(Module))}
    account_platform = {
        (r.account_id, r.platform_id): r for r in await session.scalars(select(AccountPlatform))
    }
    module_platforms: dict[int, list[ModulePlatform]] = defaultdict(list)
    for relation in await session.scalars(select(ModulePlatform)):
        module_platforms[relation.module_id].append(relation)
    middlewares = await _middlewares(session)

    found: list[Assignment] = []
    for ma in await session.scalars(select(ModuleAccount)):
        account, module = accounts[ma.account_id], modules[ma.module_id]
        for mp in module_platforms[ma.module_id]:
            ap = account_platform.get((ma.account_id, mp.platform_id))
            if ap is None:
                continue
            platform = platforms[mp.platform_id]
            a, p, m = account.name, platform.name, module.name
            switches = (
                (f"account {a}", account.enabled),
                (f"platform {p}", platform.enabled),
                (f"module {m}", module.enabled),
                (f"account×platform {a}/{p}", ap.enabled),
                (f"module×platform {m}/{p}", mp.enabled),
                (f"module×account {m}/{a}", ma.enabled),
            )
            disabled_by = next((label for label, on in switches if not on), None)
            if disabled_by is not None and not include_disabled:
                continue
            config = deep_merge(
                platform.config, module.config, account.config, ap.config, mp.config, ma.config
            )
            found.append(
                Assignment(
                    account=a,
                    platform=p,
                    module=m,
                    version=module.version,
                    priority=ma.priority,
                    config=config,
                    enabled=disabled_by is None,
                    disabled_by=disabled_by,
                    middlewares=middlewares.get(module.id, ()),
                )
            )
    found.sort(key=lambda x: (-x.priority, x.account, x.platform, x.module))
    return found


async def read_credentials(
    session: AsyncSession, sealer: Sealer, account: str, platform: str | None
) -> Credentials | None:
    """The platform's login of ``account``, else its platform-less login, else None."""
    named_platform = aliased(Platform)
    query = (
        select(Credential, named_platform.name)
        .join(Account, Credential.account_id == Account.id)
        .outerjoin(named_platform, Credential.platform_id == named_platform.id)
        .where(Account.name == account)
    )
    if platform is None:
        query = query.where(Credential.platform_id.is_(None))
    else:
        query = query.where((Credential.platform_id.is_(None)) | (named_platform.name == platform))
    rows = (await session.execute(query)).all()
    if not rows:
        return None
    row, platform_name = max(rows, key=lambda found: found[1] is not None)
    what = f"the password of account {account!r} on {platform_name or 'any platform'}"
    return Credentials(row.username, sealer.open(row.secret, what=what), dict(row.extra))


async def read_schedules(session: AsyncSession) -> list[ScheduleEntry]:
    """The enabled schedules, by module, account, platform, cron."""
    account, platform = aliased(Account), aliased(Platform)
    rows = await session.execute(
        select(Schedule, Module.name, account.name, platform.name)
        .join(Module, Schedule.module_id == Module.id)
        .outerjoin(account, Schedule.account_id == account.id)
        .outerjoin(platform, Schedule.platform_id == platform.id)
        .where(Schedule.enabled)
    )
    entries = [
        ScheduleEntry(module, account_name, platform_name, schedule.cron, schedule.misfire)
        for schedule, module, account_name, platform_name in rows
    ]
    entries.sort(key=lambda e: (e.module, e.account or "", e.platform or "", e.cron))
    return entries
