"""Tenants in and out of the database: an idempotent upsert from the tenants mapping, and its export."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import select

from ._errors import TenantsFileError
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
from .tenants_file import ANY_PLATFORM, check_tenants

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sqlalchemy.ext.asyncio import AsyncSession

    from ._secrets import Sealer

__all__ = ("RELATIONS", "import_tenants")

_N = TypeVar("_N", Account, Platform, Module, Middleware)
RELATIONS: dict[frozenset[str], type[AccountPlatform | ModuleAccount | ModulePlatform]] = {
    frozenset(("account", "platform")): AccountPlatform,
    frozenset(("module", "account")): ModuleAccount,
    frozenset(("module", "platform")): ModulePlatform,
}
_BY_KIND: dict[str, type[Account | Platform | Module]] = {
    "account": Account,
    "platform": Platform,
    "module": Module,
}


class _Importer:
    """One import in one session: rows are looked up by name and upserted."""

    def __init__(self, session: AsyncSession, sealer: Sealer, source: str) -> None:
        self.session, self.sealer, self.source = session, sealer, source
        self.counts: Counter[str] = Counter()
        self.ids: dict[tuple[str, str], int] = {}
        self.rows: dict[type[Any], dict[frozenset[tuple[str, Any]], Any]] = {}

    async def named(self, model: type[_N], name: str, fields: Mapping[str, Any]) -> _N:
        row = await self.session.scalar(select(model).where(model.name == name))
        if row is None:
            row = model(name=name, **fields)
            self.session.add(row)
        else:
            for key, value in fields.items():
                setattr(row, key, value)
        await self.session.flush()
        self.counts[model.__tablename__] += 1
        self.ids[model.__tablename__, name] = row.id
        return row

    async def find(self, model: type[_N], name: str, where: str) -> _N:
        row = await self.session.scalar(select(model).where(model.name == name))
        if row is None:
            kind = model.__tablename__.rstrip("s")
            raise TenantsFileError(
                f"{self.source}: {where}: no {kind} named {name!r} in the file or the store"
            )
        return row

    async def find_id(self, kind: str, name: str, where: str) -> int:
        model = _BY_KIND[kind]
        found = self.ids.get((model.__tablename__, name))
        if found is None:
            found = await self.session.scalar(select(model.id).where(model.name == name))
        if found is None:
            raise TenantsFileError(f"{self.source}: {where}: no {kind} {name!r} in the file or the store")
        self.ids[model.__tablename__, name] = found
        return found

    async def upsert(self, model: type[Any], keys: Mapping[str, Any], fields: Mapping[str, Any]) -> None:
        """Insert or update the row of ``model`` with ``keys``; the table is read once per import."""
        if model not in self.rows:
            found = await self.session.scalars(select(model))
            self.rows[model] = {frozenset((k, getattr(row, k)) for k in keys): row for row in found}
        rows, index = self.rows[model], frozenset(keys.items())
        row = rows.get(index)
        if row is None:
            rows[index] = row = model(**keys)
            self.session.add(row)
        for key, value in fields.items():
            setattr(row, key, value)
        self.counts[model.__tablename__] += 1

    async def module(self, name: str, body: dict[str, Any]) -> None:
        uses = body.pop("middlewares", [])
        module = await self.named(Module, name, body)
        for i, use in enumerate(uses):
            where = f"modules.{name}.middlewares[{i}]"
            middleware = await self.find(Middleware, use.pop("name"), f"{where}.name")
            use.setdefault("position", i)
            await self.upsert(ModuleMiddleware, {"module_id": module.id, "middleware_id": middleware.id}, use)

    async def account(self, name: str, body: dict[str, Any]) -> None:
        logins = body.pop("credentials", {})
        account = await self.named(Account, name, body)
        for platform_name, login in logins.items():
            where = f"accounts.{name}.credentials.{platform_name}"
            platform_id = None
            if platform_name != ANY_PLATFORM:
                platform_id = await self.find_id("platform", platform_name, where)
            if "password" in login:
                login["secret"] = self.sealer.seal(login.pop("password"))
            await self.upsert(Credential, {"account_id": account.id, "platform_id": platform_id}, login)

    async def relation(self, i: int, body: dict[str, Any]) -> None:
        named = {kind: body.pop(kind) for kind in ("module", "account", "platform") if kind in body}
        keys = {
            f"{kind}_id": await self.find_id(kind, name, f"relations[{i}].{kind}")
            for kind, name in named.items()
        }
        await self.upsert(RELATIONS[frozenset(named)], keys, body)

    async def schedule(self, i: int, body: dict[str, Any]) -> None:
        keys: dict[str, Any] = {"cron": body.pop("cron")}
        for kind in ("module", "account", "platform"):
            name = body.pop(kind, None)
            where = f"schedules[{i}].{kind}"
            keys[f"{kind}_id"] = None if name is None else await self.find_id(kind, name, where)
        await self.upsert(Schedule, keys, body)


async def import_tenants(
    session: AsyncSession, sealer: Sealer, mapping: Mapping[str, Any], *, source: str
) -> dict[str, int]:
    """Upsert everything ``mapping`` names; returns how many rows of each table were written."""
    data = check_tenants(mapping, source=source)
    importer = _Importer(session, sealer, source)
    for name, body in data.get("platforms", {}).items():
        await importer.named(Platform, name, body)
    for name, body in data.get("middlewares", {}).items():
        await importer.named(Middleware, name, body)
    for name, body in data.get("modules", {}).items():
        await importer.module(name, body)
    for name, body in data.get("accounts", {}).items():
        await importer.account(name, body)
    for i, body in enumerate(data.get("relations", [])):
        await importer.relation(i, body)
    for i, body in enumerate(data.get("schedules", [])):
        await importer.schedule(i, body)
    return dict(importer.counts)
