"""Migrations: from empty, from the previous revision with data in it, models == migrations, and the
open-time checks (a down database, an un-migrated one)."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import text

from mocra_store import Store, StoreNotMigrated, StoreUnavailable, migrate
from mocra_store._engine import make_engine
from mocra_store.models import Base

pytestmark = pytest.mark.anyio


async def _diff(url: str) -> list[Any]:
    engine = make_engine(url)
    try:
        async with engine.connect() as connection:

            def compare(sync_connection: Any) -> list[Any]:
                return list(compare_metadata(MigrationContext.configure(sync_connection), Base.metadata))

            return await connection.run_sync(compare)
    finally:
        await engine.dispose()


async def _tables(url: str) -> set[str]:
    engine = make_engine(url)
    try:
        async with engine.connect() as connection:
            return set(
                await connection.run_sync(lambda c: __import__("sqlalchemy").inspect(c).get_table_names())
            )
    finally:
        await engine.dispose()


async def test_upgrade_from_empty_reaches_head_and_creates_every_table(empty_url: str) -> None:
    assert await migrate.current_async(empty_url) is None

    assert await migrate.upgrade_async(empty_url) == migrate.head() == "0002"

    assert await migrate.current_async(empty_url) == "0002"
    assert await _tables(empty_url) >= set(Base.metadata.tables)


async def test_models_and_migrations_agree(empty_url: str) -> None:
    await migrate.upgrade_async(empty_url)

    assert await _diff(empty_url) == []


async def test_upgrade_from_the_previous_revision_keeps_the_data(empty_url: str) -> None:
    await migrate.upgrade_async(empty_url, "0001")
    engine = make_engine(empty_url)
    async with engine.begin() as connection:
        await connection.execute(
            text(
                "INSERT INTO accounts (name, enabled, config, created_at)"
                " VALUES ('alice', true, '{\"region\": \"eu\"}', CURRENT_TIMESTAMP)"
            )
        )
    await engine.dispose()
    with pytest.raises(StoreNotMigrated, match=r"at revision 0001, this mocra-store needs 0002"):
        async with Store.open(empty_url):
            pass

    assert await migrate.upgrade_async(empty_url) == "0002"

    async with Store.open(empty_url) as store:
        accounts = await store.accounts()
        await store.import_tenants(
            {"modules": {"prices": {}}, "schedules": [{"module": "prices", "cron": "* * * * *"}]}
        )
        assert [s.module for s in await store.schedules()] == ["prices"]
    assert [(a.name, a.config) for a in accounts] == [("alice", {"region": "eu"})]


async def test_downgrade_to_base_removes_every_table(empty_url: str) -> None:
    await migrate.upgrade_async(empty_url)

    assert await migrate.downgrade_async(empty_url, "base") is None

    assert await _tables(empty_url) <= {"alembic_version"}


async def test_an_unmigrated_database_raises_store_not_migrated_naming_the_command(empty_url: str) -> None:
    with pytest.raises(StoreNotMigrated) as raised:
        async with Store.open(empty_url):
            pass

    message = str(raised.value)
    assert "not initialised" in message
    assert "needs 0002" in message
    assert "mocra store upgrade" in message and "python -m mocra_store upgrade" in message


async def test_migrate_true_upgrades_on_open(empty_url: str) -> None:
    async with Store.open(empty_url, migrate=True) as store:
        assert await store.accounts() == []

    assert await migrate.current_async(empty_url) == "0002"


async def test_a_revision_newer_than_the_package_is_named(empty_url: str) -> None:
    await migrate.upgrade_async(empty_url)
    engine = make_engine(empty_url)
    async with engine.begin() as connection:
        await connection.execute(text("UPDATE alembic_version SET version_num = '0099'"))
    await engine.dispose()

    with pytest.raises(StoreNotMigrated, match=r"revision 0099, newer than this mocra-store knows"):
        async with Store.open(empty_url):
            pass


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_a_down_postgres_raises_store_unavailable_naming_the_url_without_password() -> None:
    port = _closed_port()
    url = f"postgresql://mocra:s3cret@127.0.0.1:{port}/mocra"

    with pytest.raises(StoreUnavailable) as raised:
        async with Store.open(url):
            pass

    message = str(raised.value)
    assert f"postgresql://mocra:***@127.0.0.1:{port}/mocra" in message
    assert "refused" in message.lower()
    assert "s3cret" not in message and "s3cret" not in repr(raised.value)


async def test_an_unreachable_sqlite_file_raises_store_unavailable(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path}/missing/dir/store.db"

    with pytest.raises(StoreUnavailable, match=r"store\.db is unavailable: unable to open database file"):
        async with Store.open(url):
            pass


def test_the_sync_api_refuses_to_run_inside_an_event_loop() -> None:
    import asyncio

    from mocra_store import StoreError

    async def inside() -> None:
        migrate.current("sqlite:///:memory:")

    with pytest.raises(StoreError, match="await the \\*_async variant"):
        asyncio.run(inside())
