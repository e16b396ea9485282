"""`CsvSink`: items as rows of a CSV file with a header."""

from __future__ import annotations

import csv
import io
import logging
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from ._data_sink import SinkContext
from ._errors import SinkError
from ._file import BatchFile

if TYPE_CHECKING:
    import os
    from collections.abc import Sequence

__all__ = ("CsvSink",)

logger = logging.getLogger(__name__)

_JSON = msgspec.json.Encoder()


class CsvSink(SinkContext):
    """Writes each item as one CSV row (UTF-8, CRLF line ends: the `csv` module's excel dialect).

    The header is `columns` if given, else the first item's fields: a Struct's field names (as
    encoded), a dataclass's fields, or a dict's keys, in order. Later rows fill those columns: a
    missing key or `None` gives an empty cell; lists, dicts and nested objects are JSON-encoded into
    their cell; dates, UUIDs, bytes and the like take their msgspec form (ISO 8601, text, base64).
    Keys that are not columns are left out, with one WARNING naming them the first time each appears.

    Each batch is one write in a worker thread; a batch that fails half-way is cut off again, so the
    engine's retry does not duplicate rows. The file is fsynced on `close`.

    Args:
        path: The file; created if missing.
        append: Keep what the file holds and add rows to it (a resumed job). The header is not written
            again; without `columns` the file's own header gives the columns.
        columns: The header, fixing the columns and their order.

    Raises:
        SinkError: the file cannot be opened or written (naming the path), its header differs from
            `columns`, or an item is not a record of fields or holds a value that cannot be encoded
            (not retryable).

    Example:
        >>> import anyio, pathlib, tempfile
        >>> async def main(path: str) -> None:
        ...     async with CsvSink(path) as sink:
        ...         await sink.write([{"title": "Tea", "tags": ["hot", "green"]}, {"title": "Café"}])
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     anyio.run(main, tmp + "/items.csv")
        ...     print(pathlib.Path(tmp, "items.csv").read_text("utf-8"), end="")
        title,tags
        Tea,"[""hot"",""green""]"
        Café,
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        append: bool = False,
        columns: Sequence[str] | None = None,
    ) -> None:
        self._file = BatchFile(path, append=append)
        self._given_columns = None if columns is None else list(columns)
        self._columns: list[str] | None = self._given_columns
        self._column_set = frozenset(self._columns or ())
        self._header_pending = True
        self._warned: set[str] = set()
        self._lock = anyio.Lock(fast_acquire=True)

    @property
    def path(self) -> str:
        """The file written."""
        return self._file.path

    @property
    def columns(self) -> list[str] | None:
        """The header in use; `None` until the first item (or an existing file) has given one."""
        return None if self._columns is None else list(self._columns)

    async def open(self) -> None:
        """Create, truncate or append to the file; write the header now if `columns` were given."""
        await self._file.open()
        if self._file.size:  # appending to a file that has its header
            existing = await self._existing_header()
            if self._given_columns is not None and existing != self._given_columns:
                await self._file.close()
                raise SinkError(
                    f"cannot append to {self.path!r}: its columns are {existing}, not {self._given_columns}",
                    path=self.path,
                    retryable=False,
                )
            self._set_columns(existing)
            self._header_pending = False
        elif self._columns is not None:
            await self._file.write(self._render([], header=True))
            self._header_pending = False

    async def write(self, items: Sequence[object]) -> None:
        """Append one row per item with one write (after the header, for the first batch)."""
        if not items:
            return
        async with self._lock:
            rows = [self._record(index, item) for index, item in enumerate(items)]
            if self._columns is None:
                first = items[0]
                if isinstance(first, msgspec.Struct):
                    self._set_columns([f.encode_name for f in msgspec.structs.fields(first)])
                else:
                    self._set_columns(list(rows[0]))
            await self._file.write(self._render(rows, header=self._header_pending))
            self._header_pending = False

    async def close(self) -> None:
        """Flush the file to disk and close it."""
        await self._file.close()

    def __repr__(self) -> str:
        return f"CsvSink({self.path!r})"

    def _set_columns(self, columns: list[str]) -> None:
        self._columns = columns
        self._column_set = frozenset(columns)

    async def _existing_header(self) -> list[str]:
        try:
            line = await self._file.read_first_line()
        except UnicodeDecodeError as exc:
            await self._file.close()
            raise SinkError(
                f"cannot append to {self.path!r}: its header is not UTF-8", path=self.path, retryable=False
            ) from exc
        return next(csv.reader([line]), [])

    def _record(self, index: int, item: object) -> dict[str, Any]:
        try:
            record = msgspec.to_builtins(item, str_keys=True)
        except (TypeError, ValueError, msgspec.EncodeError) as exc:
            raise SinkError(
                f"cannot write {self.path!r}: item {index} of the batch ({type(item).__name__}) cannot be "
                f"encoded: {exc}",
                path=self.path,
                retryable=False,
            ) from exc
        if not isinstance(record, dict):
            raise SinkError(
                f"cannot write {self.path!r}: item {index} of the batch is a {type(item).__name__}, not a "
                "record of fields (a Struct, dataclass or dict)",
                path=self.path,
                retryable=False,
            )
        return record

    def _render(self, records: list[dict[str, Any]], *, header: bool) -> bytes:
        columns = self._columns or []
        out = io.StringIO()
        writer = csv.writer(out)
        if header:
            writer.writerow(columns)
        column_set = self._column_set
        for record in records:
            if record.keys() - column_set:
                self._warn_extra(record.keys() - column_set)
            writer.writerow([_cell(record.get(name)) for name in columns])
        return out.getvalue().encode()

    def _warn_extra(self, extra: set[str]) -> None:
        new = extra - self._warned
        if new:
            self._warned |= new
            logger.warning("%s: keys %s are not columns %s; left out", self.path, sorted(new), self._columns)


def _cell(value: object) -> object:
    if value is None or isinstance(value, str | int | float):
        return value
    return _JSON.encode(value).decode()
