"""The tenants mapping out of the database: every field written, names sorted, secrets only when asked."""

from __future__ import annotations

from collections import defaultdict
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

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
from .tenants_file import ANY_PLATFORM, RELATION_KINDS

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sqlalchemy.ext.asyncio import AsyncSession

    from ._secrets import Sealer

__all__ = ("export_tenants",)

RELATIONS = (AccountPlatform, ModuleAccount, ModulePlatform)  # in the order of RELATION_KINDS


def _switch(row: Account | Platform | Module | Middleware) -> dict[str, Any]:
    return {"enabled": row.enabled, "config": dict(row.config)}


def _relation(row: Any, kinds: tuple[str, str], names: Mapping[str, Mapping[int, str]]) -> dict[str, Any]:
    named = {kind: names[kind][getattr(row, f"{kind}_id")] for kind in kinds}
    return {**named, "priority": row.priority, "enabled": row.enabled, "config": dict(row.config)}


async def _credentials(
    session: AsyncSession, sealer: Sealer, account_names: dict[int, str], platform_names: dict[int, str]
) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = defaultdict(dict)
    for row in await session.scalars(select(Credential)):
        account = account_names[row.account_id]
        platform = ANY_PLATFORM if row.platform_id is None else platform_names[row.platform_id]
        what = f"the password of account {account!r} on {platform}"
        login = {"username": row.username, "password": sealer.open(row.secret, what=what)}
        found[account][platform] = {**login, "extra": dict(row.extra)}
    return found


async def export_tenants(session: AsyncSession, sealer: Sealer, *, secrets: bool) -> dict[str, Any]:
    """Everything as a tenants mapping ``import_tenants`` reads back; credentials only with ``secrets``."""
    accounts = {row.id: row for row in await session.scalars(select(Account).order_by(Account.name))}
    platforms = {row.id: row for row in await session.scalars(select(Platform).order_by(Platform.name))}
    modules = {row.id: row for row in await session.scalars(select(Module).order_by(Module.name))}
    middlewares = {row.id: row for row in await session.scalars(select(Middleware).order_by(Middleware.name))}
    a_names = {i: row.name for i, row in accounts.items()}
    p_names = {i: row.name for i, row in platforms.items()}
    m_names = {i: row.name for i, row in modules.items()}

    uses: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for use in await session.scalars(select(ModuleMiddleware).order_by(ModuleMiddleware.position)):
        name = middlewares[use.middleware_id].name
        uses[use.module_id].append(
            {"name": name, "position": use.position, "enabled": use.enabled, "config": dict(use.config)}
        )
    logins = await _credentials(session, sealer, a_names, p_names) if secrets else {}

    names = {"account": a_names, "platform": p_names, "module": m_names}
    relations: list[dict[str, Any]] = []
    for model, kinds in zip(RELATIONS, RELATION_KINDS, strict=True):
        rows = [_relation(row, kinds, names) for row in await session.scalars(select(model))]
        relations += sorted(rows, key=itemgetter(*kinds))

    schedules = []
    for s in await session.scalars(select(Schedule)):
        entry: dict[str, Any] = {"module": m_names[s.module_id]}
        if s.account_id is not None:
            entry["account"] = a_names[s.account_id]
        if s.platform_id is not None:
            entry["platform"] = p_names[s.platform_id]
        schedules.append({**entry, "cron": s.cron, "misfire": s.misfire, "enabled": s.enabled})
    schedules.sort(key=lambda s: (s["module"], s.get("account", ""), s.get("platform", ""), s["cron"]))

    return {
        "platforms": {p.name: {"enabled": p.enabled, "config": dict(p.config)} for p in platforms.values()},
        "middlewares": {
            m.name: {"kind": m.kind, "enabled": m.enabled, "config": dict(m.config)}
            for m in middlewares.values()
        },
        "modules": {
            m.name: {
                "version": m.version,
                "enabled": m.enabled,
                "config": dict(m.config),
                "middlewares": uses[i],
            }
            for i, m in modules.items()
        },
        "accounts": {
            a.name: {"enabled": a.enabled, "config": dict(a.config)}
            | ({"credentials": logins[a.name]} if a.name in logins else {})
            for a in accounts.values()
        },
        "relations": relations,
        "schedules": schedules,
    }
