"""`XlsxSink`: items as the rows of an Excel workbook, written with openpyxl (the `excel` extra)."""

from __future__ import annotations

import datetime
import os
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
import msgspec
import openpyxl
from openpyxl.cell import WriteOnlyCell

from ._cells import cell, decode_rows, encode_rows
from ._data_sink import SinkContext
from ._errors import SinkError
from ._spool import Spool, iter_blobs

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from openpyxl.cell import Cell
    from openpyxl.worksheet._write_only import WriteOnlyWorksheet

__all__ = ("XlsxSink",)

MAX_ROWS = 1_048_576
"""Rows of an Excel sheet, the header's included."""

_KEEP = (datetime.datetime, datetime.date, datetime.time, datetime.timedelta)


class XlsxSink(SinkContext):
    """Writes each item as a row of one sheet of an `.xlsx` workbook, complete when the sink closes.

    The header row is the first item's fields (a Struct's names as encoded, a dataclass's fields or a
    dict's keys, in order); a field that appears later is a new column at the right (empty in the rows
    before). How values become cells: see `mocra_core.sinks._cells` (dates stay dates, lists and dicts
    are JSON text, what Excel cannot hold is text; text that starts with `=` is never a formula). A sheet
    that fills (1,048,576 rows) goes on in a new one, `items (2)`, with the header again.

    Until `close` the rows wait in the spool file `<path>.spool` (each batch one write: it survives the
    process being killed); `close` streams them into the workbook with openpyxl's write-only mode (memory
    does not grow with the rows), replaces `path` and removes the spool. A job resumed with `append=True`
    keeps the rows of `path` and of the spool a crashed run left.

    Args:
        path: The workbook; replaced when the sink opens (unless `append`) and written at `close`.
        append: Keep the workbook's rows and a crashed run's spool, and add to them (a resumed job).
        sheet: The sheet's name.

    Raises:
        SinkError: a file cannot be written (naming it; retryable), or an item is not a record of fields
            (not retryable; nothing of the batch is kept).

    Example:
        >>> import anyio, tempfile, openpyxl
        >>> async def main(path: str) -> None:
        ...     async with XlsxSink(path) as sink:
        ...         await sink.write([{"title": "Dune", "tags": ["sf"]}, {"title": "=1+1", "price": 3.5}])
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     anyio.run(main, tmp + "/items.xlsx")
        ...     print(list(openpyxl.load_workbook(tmp + "/items.xlsx")["items"].values))
        [('title', 'tags', 'price'), ('Dune', '["sf"]', None), ('=1+1', None, 3.5)]
    """

    def __init__(self, path: str | os.PathLike[str], *, append: bool = False, sheet: str = "items") -> None:
        self._path = os.fspath(path)
        self._append = append
        self._sheet = sheet
        self._columns: list[str] = []
        self._index: dict[str, int] = {}
        self._spool: Spool | None = None
        self._lock = anyio.Lock(fast_acquire=True)

    @property
    def path(self) -> str:
        """The workbook written."""
        return self._path

    @property
    def columns(self) -> list[str]:
        """The header so far."""
        return list(self._columns)

    async def open(self) -> None:
        """Replace the workbook, or (`append`) take up its rows and a crashed run's spool."""
        spool = Spool(self._path + ".spool")
        try:
            columns = await anyio.to_thread.run_sync(self._recover)
        except (OSError, ValueError, KeyError, msgspec.DecodeError) as exc:
            raise SinkError(f"cannot open {self._path!r}: {exc}", path=self._path) from exc
        await spool.open(keep=self._append)
        self._set_columns(columns)
        self._spool = spool

    async def write(self, items: Sequence[object]) -> None:
        """Append the batch's rows to the spool with one write."""
        if not items:
            return
        async with self._lock:
            if self._spool is None:
                raise SinkError(f"{self._path!r} is not open", path=self._path, retryable=False)
            records = [self._record(index, item) for index, item in enumerate(items)]
            columns = list(self._columns)
            index = dict(self._index)
            for record in records:
                for key in record:
                    if key not in index:
                        index[key] = len(columns)
                        columns.append(key)
            rows = [[cell(record.get(name)) for name in columns] for record in records]
            await self._spool.append(encode_rows(columns, rows))
            self._columns, self._index = columns, index

    async def close(self) -> None:
        """Write the workbook: the header, the rows `path` held (`append`), then the spool's rows."""
        async with self._lock:
            spool, self._spool = self._spool, None
            if spool is None:
                return
            with anyio.CancelScope(shield=True):
                await spool.close()
                try:
                    await anyio.to_thread.run_sync(self._build, spool.path)
                except (OSError, ValueError) as exc:
                    raise SinkError(f"cannot write {self._path!r}: {exc}", path=self._path) from exc
                await spool.remove()

    def __repr__(self) -> str:
        return f"XlsxSink({self._path!r})"

    def _set_columns(self, columns: list[str]) -> None:
        self._columns = columns
        self._index = {name: i for i, name in enumerate(columns)}

    def _record(self, index: int, item: object) -> dict[str, Any]:
        try:
            record = msgspec.to_builtins(item, builtin_types=_KEEP, str_keys=True)
        except (TypeError, ValueError, msgspec.EncodeError) as exc:
            message = f"item {index} of the batch ({type(item).__name__}) cannot be encoded: {exc}"
            raise SinkError(
                f"cannot write {self._path!r}: {message}", path=self._path, retryable=False
            ) from exc
        if not isinstance(record, dict):
            raise SinkError(
                f"cannot write {self._path!r}: item {index} of the batch is a {type(item).__name__}, not a "
                "record of fields (a Struct, dataclass or dict)",
                path=self._path,
                retryable=False,
            )
        return record

    def _recover(self) -> list[str]:
        """The header so far: the workbook's, then the spool's (unless starting afresh)."""
        if not self._append:
            for file in (self._path, self._path + ".spool"):
                if os.path.exists(file):
                    os.unlink(file)
            return []
        columns: list[str] = []
        if os.path.exists(self._path):
            columns = next(self._old_rows(header=True), [])
        for blob in iter_blobs(self._path + ".spool"):
            columns = decode_rows(blob)[0]
        return columns

    def _old_rows(self, *, header: bool) -> Iterator[list[Any]]:
        """The rows of the workbook at `path`: its header (`header`), or the data rows of every sheet."""
        book = openpyxl.load_workbook(self._path, read_only=True)
        try:
            for sheet in book.worksheets:
                rows = sheet.iter_rows(values_only=True)
                first = next(rows, None)
                if header:
                    yield [str(v) for v in first or () if v is not None]
                    return
                for row in rows:
                    yield list(row)
        finally:
            book.close()

    def _build(self, spool_path: str) -> None:
        book = openpyxl.Workbook(write_only=True)
        width = len(self._columns)
        sheets = _Sheets(book, self._sheet, self._columns)
        if self._append and os.path.exists(self._path):
            for row in self._old_rows(header=False):
                sheets.append(row[:width] + [None] * (width - len(row)))
        for blob in iter_blobs(spool_path):
            for row in decode_rows(blob)[1]:
                sheets.append(row + [None] * (width - len(row)))
        temporary = self._path + ".tmp"
        book.save(temporary)
        os.replace(temporary, self._path)


class _Sheets:
    """Appends rows to `name`, then `name (2)`, ... as each fills, each with the header first."""

    def __init__(self, book: openpyxl.Workbook, name: str, header: list[str]) -> None:
        self._book = book
        self._name = name
        self._header = header
        self._count = 0
        self._rows = MAX_ROWS
        self._sheet: WriteOnlyWorksheet | None = None
        self._new_sheet()

    def append(self, row: list[Any]) -> None:
        if self._rows >= MAX_ROWS:
            self._new_sheet()
        sheet = self._sheet
        assert sheet is not None
        sheet.append([_text_cell(sheet, v) if isinstance(v, str) and v.startswith("=") else v for v in row])
        self._rows += 1

    def _new_sheet(self) -> None:
        self._count += 1
        title = self._name if self._count == 1 else f"{self._name} ({self._count})"
        self._sheet = self._book.create_sheet(title)
        self._sheet.append(list(self._header))
        self._rows = 1


def _text_cell(sheet: WriteOnlyWorksheet, value: str) -> Cell:
    """A cell that holds `value` as text (openpyxl would make `=...` a formula)."""
    text = WriteOnlyCell(sheet, value=value)
    text.data_type = "s"
    return text
