"""One suite over SQLite (a file per test) and the PostgreSQL server on 127.0.0.1:5432 (a fresh database
per test session, emptied before each test; migration tests get a database of their own)."""

from __future__ import annotations

import os
import uuid
from typing import TYPE_CHECKING

import psycopg
import pytest
from sqlalchemy.engine import make_url

from mocra_store import migrate
from mocra_store.models import Base

if TYPE_CHECKING:
    import pathlib
    from collections.abc import Iterator

ADMIN_URL = os.environ.get("MOCRA_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Postgres:
    """Creates uniquely named databases on the test server and drops them at the end of the session."""

    def __init__(self) -> None:
        self.admin = make_url(ADMIN_URL)
        self.created: list[str] = []

    def _execute(self, sql: str) -> None:
        dsn = self.admin.set(drivername="postgresql").render_as_string(hide_password=False)
        with psycopg.connect(dsn, autocommit=True) as connection:
            connection.execute(sql)

    def database(self) -> str:
        name = f"mocra_store_test_{uuid.uuid4().hex[:12]}"
        self._execute(f'CREATE DATABASE "{name}"')
        self.created.append(name)
        return self.admin.set(database=name).render_as_string(hide_password=False)

    def truncate(self, url: str) -> None:
        tables = ", ".join(table.name for table in Base.metadata.sorted_tables)
        dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
        with psycopg.connect(dsn, autocommit=True) as connection:
            connection.execute(f"TRUNCATE {tables} RESTART IDENTITY CASCADE")

    def drop_all(self) -> None:
        for name in self.created:
            self._execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    server = Postgres()
    yield server
    server.drop_all()


@pytest.fixture(scope="session")
def postgres_at_head(postgres: Postgres) -> str:
    url = postgres.database()
    migrate.upgrade(url)
    return url


@pytest.fixture(params=BACKENDS)
def empty_url(request: pytest.FixtureRequest, tmp_path: pathlib.Path, postgres: Postgres) -> str:
    """A database with nothing in it (not migrated)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/store.db"
    return postgres.database()


@pytest.fixture(params=BACKENDS)
def url(
    request: pytest.FixtureRequest, tmp_path: pathlib.Path, postgres: Postgres, postgres_at_head: str
) -> str:
    """A database migrated to head, with no rows."""
    if request.param == "sqlite":
        found = f"sqlite:///{tmp_path}/store.db"
        migrate.upgrade(found)
        return found
    postgres.truncate(postgres_at_head)
    return postgres_at_head
