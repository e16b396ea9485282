"""Stores for the metadata tests: a SQLite file, and a fresh database on the PostgreSQL of 127.0.0.1:5432."""

from __future__ import annotations

import os
import uuid
from typing import TYPE_CHECKING

import psycopg
import pytest

from mocra_core.testing import LocalServer
from mocra_store import migrate

if TYPE_CHECKING:
    import pathlib
    from collections.abc import AsyncIterator, Iterator

ADMIN = os.environ.get("MOCRA_TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/postgres")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def server() -> AsyncIterator[LocalServer]:
    site = LocalServer()
    async with site.running():
        yield site


def _execute(sql: str) -> None:
    with psycopg.connect(ADMIN, autocommit=True) as connection:
        connection.execute(sql)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[str]:
    """An empty store migrated to head."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path}/mocra.db"
        migrate.upgrade(url)
        yield url
        return
    name = f"mocra_core_meta_{uuid.uuid4().hex[:12]}"
    _execute(f'CREATE DATABASE "{name}"')
    url = ADMIN.rsplit("/", 1)[0] + f"/{name}"
    try:
        migrate.upgrade(url)
        yield url
    finally:
        _execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
