"""The models on both backends: CRUD, unique names and pairs, cascades, the check constraints, UTC."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from mocra_store._engine import make_engine
from mocra_store.models import (
    Account,
    AccountPlatform,
    Credential,
    Middleware,
    Module,
    ModuleMiddleware,
    Platform,
    RunRecord,
)

pytestmark = pytest.mark.anyio


@pytest.fixture
async def sessions(url: str):  # type: ignore[no-untyped-def]
    engine = make_engine(url)
    yield async_sessionmaker(engine, expire_on_commit=False)
    await engine.dispose()


async def test_create_read_update_delete(sessions: async_sessionmaker[AsyncSession]) -> None:
    async with sessions.begin() as session:
        session.add(Account(name="alice", config={"region": "eu", "nested": {"a": [1, 2]}}))
    async with sessions.begin() as session:
        alice = await session.scalar(select(Account).where(Account.name == "alice"))
        assert alice is not None
        assert (alice.enabled, alice.config) == (True, {"region": "eu", "nested": {"a": [1, 2]}})
        alice.enabled = False
    async with sessions.begin() as session:
        alice = await session.scalar(select(Account))
        assert alice is not None and alice.enabled is False
        await session.delete(alice)
    async with sessions() as session:
        assert (await session.scalars(select(Account))).all() == []


async def test_names_are_unique(sessions: async_sessionmaker[AsyncSession]) -> None:
    async with sessions.begin() as session:
        session.add(Platform(name="shop"))
    with pytest.raises(IntegrityError):
        async with sessions.begin() as session:
            session.add(Platform(name="shop"))


async def test_a_relation_pair_is_unique(sessions: async_sessionmaker[AsyncSession]) -> None:
    async with sessions.begin() as session:
        alice, shop = Account(name="alice"), Platform(name="shop")
        session.add_all([alice, shop])
        await session.flush()
        session.add(AccountPlatform(account_id=alice.id, platform_id=shop.id))
    with pytest.raises(IntegrityError):
        async with sessions.begin() as session:
            session.add(AccountPlatform(account_id=alice.id, platform_id=shop.id))


async def test_deleting_an_account_cascades_to_its_relations_and_logins(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    async with sessions.begin() as session:
        alice, shop = Account(name="alice"), Platform(name="shop")
        session.add_all([alice, shop])
        await session.flush()
        session.add(AccountPlatform(account_id=alice.id, platform_id=shop.id, priority=3))
        session.add(Credential(account_id=alice.id, platform_id=shop.id, username="a", secret="plain:x"))

    async with sessions.begin() as session:
        await session.delete(await session.get(Account, alice.id))

    async with sessions() as session:
        assert (await session.scalars(select(AccountPlatform))).all() == []
        assert (await session.scalars(select(Credential))).all() == []
        assert [p.name for p in await session.scalars(select(Platform))] == ["shop"]


async def test_one_any_platform_login_per_account(sessions: async_sessionmaker[AsyncSession]) -> None:
    async with sessions.begin() as session:
        alice = Account(name="alice")
        session.add(alice)
        await session.flush()
        session.add(Credential(account_id=alice.id, platform_id=None, username="a", secret="plain:x"))
    with pytest.raises(IntegrityError):
        async with sessions.begin() as session:
            session.add(Credential(account_id=alice.id, platform_id=None, username="b", secret="plain:y"))


async def test_middleware_kind_is_checked(sessions: async_sessionmaker[AsyncSession]) -> None:
    async with sessions.begin() as session:
        session.add(Middleware(name="retry", kind="download"))
        prices = Module(name="prices", version="2")
        session.add(prices)
        await session.flush()
        retry = await session.scalar(select(Middleware))
        assert retry is not None
        session.add(ModuleMiddleware(module_id=prices.id, middleware_id=retry.id, position=1))
    with pytest.raises(IntegrityError):
        async with sessions.begin() as session:
            session.add(Middleware(name="odd", kind="upload"))


async def test_run_status_is_checked(sessions: async_sessionmaker[AsyncSession]) -> None:
    with pytest.raises(IntegrityError):
        async with sessions.begin() as session:
            session.add(RunRecord(run_id="r1", module="prices", status="paused"))


async def test_timestamps_come_back_aware_in_utc(sessions: async_sessionmaker[AsyncSession]) -> None:
    tokyo = timezone(timedelta(hours=9))
    started = datetime(2024, 5, 1, 18, 0, tzinfo=tokyo)
    async with sessions.begin() as session:
        session.add(RunRecord(run_id="r1", module="prices", started_at=started))
        session.add(Account(name="alice"))
    async with sessions() as session:
        run = await session.scalar(select(RunRecord))
        alice = await session.scalar(select(Account))
    assert run is not None and alice is not None
    assert run.started_at == started and run.started_at.tzinfo == UTC
    assert run.started_at.hour == 9
    assert alice.created_at.tzinfo == UTC
    assert abs(datetime.now(UTC) - alice.created_at) < timedelta(minutes=5)


def test_reprs_show_names_not_secrets() -> None:
    login = Credential(id=1, account_id=1, username="alice", secret="plain:s3cret")

    assert repr(Account(id=1, name="alice")) == "Account(id=1, name='alice')"
    assert "s3cret" not in repr(login)
