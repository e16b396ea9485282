"""`SqlSink`: items as rows of a SQL table, through SQLAlchemy 2 (the `sql` extra)."""

from __future__ import annotations

import datetime
import decimal
from typing import TYPE_CHECKING, Any

import anyio.to_thread
import msgspec
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from .._errors import redact
from ._data_sink import SinkContext
from ._errors import SinkError
from ._sql_fence import CLAIM, TOKEN, fence_condition, fenced_rows

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..queue._fence import Fence

__all__ = ("SqlSink",)

_KEEP = (datetime.datetime, datetime.date, decimal.Decimal, bytes)  # kept as such by `to_builtins`
_UPSERT = ("sqlite", "postgresql")  # the dialects with INSERT ... ON CONFLICT
_FENCE_TYPES: dict[str, sa.types.TypeEngine[Any]] = {CLAIM: sa.Text(), TOKEN: sa.BigInteger()}


def _column_type(value: object) -> sa.types.TypeEngine[Any]:
    """The column type for a field whose first non-null value is `value`."""
    if isinstance(value, bool):
        return sa.Boolean()
    if isinstance(value, int):
        return sa.BigInteger()
    if isinstance(value, float):
        return sa.Double()
    if isinstance(value, decimal.Decimal):
        return sa.Numeric()
    if isinstance(value, datetime.datetime):
        return sa.DateTime(timezone=value.tzinfo is not None)
    if isinstance(value, datetime.date):
        return sa.Date()
    if isinstance(value, bytes):
        return sa.LargeBinary()
    if isinstance(value, str) or value is None:
        return sa.Text()
    return sa.JSON()  # lists, nested objects


class SqlSink(SinkContext):
    """Writes each item as a row of `table`, one transaction per batch (all of it or none).

    Items are dicts, msgspec Structs or dataclasses; a field is a column. The table is created from the
    first batch if it does not exist (types from the values: integers, floats, text, booleans, dates,
    bytes; lists and nested objects as JSON), and a field no column has yet is added as a column when
    it first appears. Writes run in a worker thread on a synchronous SQLAlchemy engine.

    Args:
        url: A SQLAlchemy database URL: `sqlite:///items.db`, `postgresql+psycopg://user@host/db`, ...
        table: The table's name.
        key: The field (or fields) that identify an item: the table's primary key when the sink creates
            it, and an item whose key is already in the table replaces that row (an upsert: SQLite and
            PostgreSQL). Delivery to sinks is at-least-once — an item written just before a worker died
            is written again — so with a key each item is one row. `None`: every item adds a row.

    The engine writes with `write_fenced`: each row then keeps the claim (message and lease) it was
    written under, in the columns `_mocra_claim` and `_mocra_fence` (added to an existing table on the
    first such write), and the write of a worker whose lease had expired, and whose message another
    worker has written since, loses (see `write_fenced`).

    Attributes:
        fenced: Items refused so far because a newer claim of their message had written them.

    Raises:
        SinkError: the database cannot be reached (retryable) or refuses a batch (naming the table;
            not retryable when the data is at fault, e.g. a value of the wrong type), an item has no
            fields, or `key` is not unique in an existing table or not supported by the database.

    Example:
        >>> import anyio, tempfile, sqlalchemy
        >>> async def main(url: str) -> None:
        ...     async with SqlSink(url, "books", key="id") as sink:
        ...         await sink.write([{"id": 1, "title": "Tea", "tags": ["hot"]}, {"id": 2, "title": "Café"}])
        ...         await sink.write([{"id": 1, "title": "Green tea"}])  # the same id: replaces the row
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     anyio.run(main, f"sqlite:///{tmp}/items.db")
        ...     engine = sqlalchemy.create_engine(f"sqlite:///{tmp}/items.db")
        ...     with engine.connect() as db:
        ...         print(db.execute(sqlalchemy.text("SELECT id, title FROM books ORDER BY id")).all())
        ...     engine.dispose()
        [(1, 'Green tea'), (2, 'Café')]
    """

    def __init__(self, url: str, table: str = "items", *, key: str | Sequence[str] | None = None) -> None:
        if not table:
            raise ValueError("table must not be empty")
        self.url = url
        self.table_name = table
        self.key: tuple[str, ...] = (key,) if isinstance(key, str) else tuple(key or ())
        self._engine: sa.Engine | None = None
        self._table: sa.Table | None = None
        self.fenced = 0

    def __repr__(self) -> str:
        key = f", key={self.key!r}" if self.key else ""
        return f"SqlSink({redact(self.url)!r}, {self.table_name!r}{key})"

    async def open(self) -> None:
        """Connect, and read the table's columns if it exists."""
        await anyio.to_thread.run_sync(self._open)

    def _open(self) -> None:
        try:
            engine = sa.create_engine(self.url, pool_pre_ping=True)  # a restarted server: reconnect
        except (sa.exc.ArgumentError, ImportError) as exc:
            raise SinkError(f"cannot use database {redact(self.url)!r}: {exc}", retryable=False) from None
        if self.key and engine.dialect.name not in _UPSERT:
            engine.dispose()
            problem = f"a key (upsert) needs SQLite or PostgreSQL, not {engine.dialect.name}"
            raise SinkError(f"{self._where()}: {problem}", retryable=False)
        try:
            with engine.connect() as db:
                if sa.inspect(db).has_table(self.table_name):
                    self._table = sa.Table(self.table_name, sa.MetaData(), autoload_with=db)
                    self._check_key(db)
        except sa.exc.SQLAlchemyError as exc:
            engine.dispose()
            raise self._error(exc) from None
        self._engine = engine

    def _check_key(self, db: sa.Connection) -> None:
        if not self.key:
            return
        inspector = sa.inspect(db)
        unique = [tuple(inspector.get_pk_constraint(self.table_name)["constrained_columns"])]
        unique += [tuple(c["column_names"]) for c in inspector.get_unique_constraints(self.table_name)]
        for index in inspector.get_indexes(self.table_name):
            if index["unique"]:
                unique.append(tuple(name for name in index["column_names"] if name is not None))
        if not any(set(columns) == set(self.key) for columns in unique):
            key = ", ".join(self.key)
            problem = f"key ({key}) is not the primary key or a unique constraint of the existing table"
            raise SinkError(f"{self._where()}: {problem}", retryable=False)

    async def write(self, items: Sequence[object]) -> None:
        """Insert (or, with a key, upsert) `items` in one transaction."""
        if self._engine is None:
            raise SinkError(f"{self._where()}: write before open", retryable=False)
        if items:
            rows = [self._row(item) for item in items]
            await anyio.to_thread.run_sync(self._write, rows, False)

    async def write_fenced(self, items: Sequence[object], fences: Sequence[Fence | None]) -> int:
        """Upsert `items`, `items[i]` under the claim `fences[i]`; returns how many lost to a newer claim.

        An item loses when its key's row was written under the same message's claim with a higher
        token (a later lease: the item's worker had lost the message to another); the row is kept as
        it is. Every other item is written as `write` would (the last write of a key wins), with its
        claim. Without a key, or without fences, this is `write`: nothing is fenced.

        Raises:
            SinkError: as `write`.

        Example:
            >>> import anyio, tempfile
            >>> from mocra_core.queue import Fence
            >>> async def main(url: str) -> list[int]:
            ...     async with SqlSink(url, "pages", key="url") as sink:
            ...         new = await sink.write_fenced([{"url": "/a", "by": "b"}], [Fence("fetch/7", 2)])
            ...         old = await sink.write_fenced([{"url": "/a", "by": "a"}], [Fence("fetch/7", 1)])
            ...         return [new, old, sink.fenced]
            >>> with tempfile.TemporaryDirectory() as tmp:
            ...     anyio.run(main, f"sqlite:///{tmp}/items.db")
            [0, 1, 1]
        """
        if len(items) != len(fences):
            raise ValueError(f"{len(items)} items but {len(fences)} fences")
        if not self.key or all(fence is None for fence in fences):
            await self.write(items)
            return 0
        if self._engine is None:
            raise SinkError(f"{self._where()}: write before open", retryable=False)
        rows, lost = fenced_rows([self._row(item) for item in items], fences, self.key)
        written = await anyio.to_thread.run_sync(self._write, rows, True)
        lost += len(rows) - written
        self.fenced += lost
        return lost

    def _row(self, item: object) -> dict[str, Any]:
        try:
            row = msgspec.to_builtins(item, builtin_types=_KEEP)
        except (TypeError, msgspec.EncodeError) as exc:
            raise SinkError(f"{self._where()}: cannot convert {item!r}: {exc}", retryable=False) from None
        if not isinstance(row, dict) or not row:
            problem = f"an item needs fields (a dict, Struct or dataclass), got {type(item).__name__}"
            raise SinkError(f"{self._where()}: {problem}", retryable=False)
        if missing := [k for k in self.key if row.get(k) is None]:
            raise SinkError(f"{self._where()}: item without its key {missing}: {item!r}", retryable=False)
        return row

    def _write(self, rows: list[dict[str, Any]], fenced: bool) -> int:
        """Write `rows` in one transaction; how many were written (`fenced`: those a claim did not lose)."""
        assert self._engine is not None
        fields = list(dict.fromkeys(name for row in rows for name in row))
        shaping = False  # making the table or its columns, which another worker may be doing at once
        try:
            with self._engine.begin() as db:
                shaping = True
                table = self._columns_for(db, rows, fields)
                shaping = False
                params = [{f: row.get(f) for f in fields} for row in rows]
                result = db.execute(self._statement(table, fields, fenced), params)
                return len(result.all()) if fenced else len(rows)
        except sa.exc.SQLAlchemyError as exc:
            self._table = None  # a table or columns made in the failed transaction are gone: read it again
            raise self._error(exc, shaping=shaping) from None

    def _columns_for(self, db: sa.Connection, rows: list[dict[str, Any]], fields: list[str]) -> sa.Table:
        """The table, created or given the columns `fields` need first (in the batch's transaction)."""

        def column_type(field: str) -> sa.types.TypeEngine[Any]:
            if field in _FENCE_TYPES:
                return _FENCE_TYPES[field]
            return _column_type(next((row[field] for row in rows if row.get(field) is not None), None))

        if self._table is None and sa.inspect(db).has_table(self.table_name):
            self._table = sa.Table(self.table_name, sa.MetaData(), autoload_with=db)
        if self._table is None:
            metadata = sa.MetaData()
            columns = [
                sa.Column(field, column_type(field), primary_key=field in self.key) for field in fields
            ]
            self._table = sa.Table(self.table_name, metadata, *columns)
            metadata.create_all(db)
            return self._table
        new = [field for field in fields if field not in self._table.c]
        for field in new:
            column = sa.Column(field, column_type(field))
            quote = db.dialect.identifier_preparer.quote
            kind = column.type.compile(dialect=db.dialect)
            db.execute(sa.text(f"ALTER TABLE {quote(self.table_name)} ADD COLUMN {quote(field)} {kind}"))
            self._table.append_column(column)
        return self._table

    def _statement(self, table: sa.Table, fields: list[str], fenced: bool) -> sa.Insert:
        """The insert, or with a key the upsert (`fenced`: only where the claim wins, returning the keys)."""
        if not self.key:
            return table.insert()
        dialect = self._engine.dialect.name if self._engine else ""
        insert = postgresql.insert(table) if dialect == "postgresql" else sqlite.insert(table)
        updates = {f: insert.excluded[f] for f in fields if f not in self.key}
        if not updates:
            return insert.on_conflict_do_nothing(index_elements=list(self.key))
        if not fenced:
            return insert.on_conflict_do_update(index_elements=list(self.key), set_=updates)
        where = fence_condition(table, insert.excluded)
        upsert = insert.on_conflict_do_update(index_elements=list(self.key), set_=updates, where=where)
        return upsert.returning(*(table.c[name] for name in self.key))

    async def close(self) -> None:
        """Release the connections."""
        engine, self._engine = self._engine, None
        if engine is not None:
            await anyio.to_thread.run_sync(engine.dispose)

    def _where(self) -> str:
        return f"table {self.table_name!r} of {redact(self.url)!r}"

    def _error(self, exc: sa.exc.SQLAlchemyError, *, shaping: bool = False) -> SinkError:
        """A `SinkError` for a database error: retryable when the connection failed, not when the data did.

        An error while making the table or a column (`shaping`) is retryable too: another worker of the
        job may have made the same one at the same moment (PostgreSQL then refuses the second with a
        duplicate key in its catalog), and the write done again finds it.
        """
        retryable = (
            shaping
            or isinstance(exc, sa.exc.OperationalError | sa.exc.InterfaceError)
            or (isinstance(exc, sa.exc.DBAPIError) and exc.connection_invalidated)
        )
        detail = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        return SinkError(f"cannot write {self._where()}: {detail}", retryable=retryable)
