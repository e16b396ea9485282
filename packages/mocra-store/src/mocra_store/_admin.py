"""Admin writes and listings: switch or delete an account/platform/module, set a login, re-seal secrets."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from ._errors import NotFound
from .models import Account, Credential, Module, Platform
from .records import TenantInfo

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sqlalchemy.ext.asyncio import AsyncSession

    from ._secrets import Sealer

__all__ = ("KINDS", "delete_named", "list_named", "reseal", "set_enabled", "set_login")

KINDS: dict[str, type[Account | Platform | Module]] = {
    "account": Account,
    "platform": Platform,
    "module": Module,
}


def _model(kind: str) -> Any:  # one of KINDS; Any because select() of a union types as Base
    try:
        return KINDS[kind]
    except KeyError:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}") from None


async def _row(session: AsyncSession, kind: str, name: str) -> Account | Platform | Module:
    model = _model(kind)
    row: Account | Platform | Module | None = await session.scalar(select(model).where(model.name == name))
    if row is None:
        raise NotFound(f"no {kind} named {name!r}")
    return row


async def set_enabled(session: AsyncSession, kind: str, name: str, enabled: bool) -> None:
    """Switch an account, platform or module on or off."""
    (await _row(session, kind, name)).enabled = enabled


async def delete_named(session: AsyncSession, kind: str, name: str) -> None:
    """Delete an account, platform or module; its relations, logins and schedules go with it."""
    await session.delete(await _row(session, kind, name))


async def list_named(session: AsyncSession, kind: str) -> list[TenantInfo]:
    """Every account, platform or module, by name."""
    model = _model(kind)
    rows = await session.scalars(select(model).order_by(model.name))
    return [
        TenantInfo(
            kind, row.name, row.enabled, dict(row.config), row.version if isinstance(row, Module) else None
        )
        for row in rows
    ]


async def set_login(
    session: AsyncSession,
    sealer: Sealer,
    account: str,
    platform: str | None,
    *,
    username: str,
    password: str,
    extra: Mapping[str, Any] | None,
) -> None:
    """Create or replace the login of ``account`` on ``platform`` (None: any platform)."""
    account_id = (await _row(session, "account", account)).id
    platform_id = None if platform is None else (await _row(session, "platform", platform)).id
    row = await session.scalar(select(Credential).filter_by(account_id=account_id, platform_id=platform_id))
    if row is None:
        row = Credential(account_id=account_id, platform_id=platform_id)
        session.add(row)
    row.username, row.secret, row.extra = username, sealer.seal(password), dict(extra or {})


async def reseal(session: AsyncSession, sealer: Sealer) -> int:
    """Seal every stored secret again with the current first key; returns how many."""
    count = 0
    for row in await session.scalars(select(Credential)):
        row.secret = sealer.reseal(row.secret, what=f"credential #{row.id}")
        count += 1
    return count
