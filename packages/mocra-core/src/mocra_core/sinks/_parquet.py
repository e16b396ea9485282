"""`ParquetSink`: items as a Parquet file, written with polars (the `polars` extra)."""

from __future__ import annotations

import io
import logging
import os
import shutil
from typing import TYPE_CHECKING, Literal, TypeVar

import anyio
import anyio.to_thread
import polars as pl

from ._data_sink import SinkContext
from ._errors import SinkError
from ._frames import ItemError, concat_frames, item_frame
from ._polars_types import merge_schema
from ._spool import Spool, iter_blobs

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = ("ParquetSink",)

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

ROW_GROUP_SIZE = 50_000
"""Rows of one Parquet row group, by default: also the most rows the sink holds before writing a part."""


class ParquetSink(SinkContext):
    """Writes items as the rows of one Parquet file, `path`, complete when the sink closes.

    Items are msgspec Structs, dataclasses, TypedDicts or dicts; a field is a column. A record type's
    annotations give its columns' types (`str` → String, `list[str]` → List(String), a nested Struct →
    Struct, ...: see `mocra_core.sinks._polars_types`), and polars infers the rest from the values. A
    column's type may widen from batch to batch (no value yet → any type, Int64 → Float64, a scalar →
    String, a Struct gains fields); a new field adds a column (null in the rows before).

    A Parquet file is only readable once written whole, so until `close` the items wait in the folder
    `<path>.parts`: each batch is appended to a spool file there (Arrow IPC, one write: it survives the
    process being killed, as the JSONL sink's lines do), and every `row_group_size` rows the spool becomes
    a Parquet part of one row group. `close` streams the parts into `path` (memory: about one row group)
    and removes the folder. A job resumed with `append=True` keeps what the folder and `path` hold.

    Args:
        path: The file; replaced when the sink opens (unless `append`) and written at `close`.
        append: Keep `path`'s rows and a crashed run's parts, and add to them (a resumed job).
        row_group_size: Rows per row group.
        compression: Parquet compression codec.

    Raises:
        SinkError: a file cannot be written (naming the path; retryable), or an item is not a record
            of fields, or a column's values do not fit one type (not retryable; nothing of the batch is kept).

    Example:
        >>> import anyio, tempfile, polars as pl
        >>> async def main(path: str) -> None:
        ...     async with ParquetSink(path) as sink:
        ...         await sink.write([{"title": "Dune", "price": 9}, {"title": "Emma", "tags": ["uk"]}])
        ...         await sink.write([{"title": "Tea", "price": 3.5}])
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     anyio.run(main, tmp + "/items.parquet")
        ...     print(pl.read_parquet(tmp + "/items.parquet").rows())
        [('Dune', 9.0, None), ('Emma', None, ['uk']), ('Tea', 3.5, None)]
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        append: bool = False,
        row_group_size: int = ROW_GROUP_SIZE,
        compression: Literal["zstd", "snappy", "lz4", "gzip", "uncompressed"] = "zstd",
    ) -> None:
        if row_group_size < 1:
            raise ValueError(f"row_group_size: must be at least 1, got {row_group_size}")
        self._path = os.fspath(path)
        self._parts = self._path + ".parts"
        self._append = append
        self._row_group_size = row_group_size
        self._compression = compression
        self._schema: dict[str, pl.DataType] = {}
        self._number = 0  # the part the spool fills
        self._rows = 0  # rows in the spool
        self._spool: Spool | None = None
        self._lock = anyio.Lock(fast_acquire=True)

    @property
    def path(self) -> str:
        """The file written."""
        return self._path

    @property
    def schema(self) -> dict[str, pl.DataType]:
        """The columns so far (name → polars type), in order."""
        return dict(self._schema)

    async def open(self) -> None:
        """Replace the file, or (`append`) take up what it and a crashed run's parts hold."""
        self._number, self._rows, self._schema = await self._thread("open", self._recover)
        self._spool = Spool(self._spool_path(self._number))
        await self._spool.open(keep=True)

    async def write(self, items: Sequence[object]) -> None:
        """Append the batch to the spool (one write), then write a part if a row group is full."""
        if not items:
            return
        async with self._lock:
            spool = self._spool
            if spool is None:
                raise SinkError(f"{self._path!r} is not open", path=self._path, retryable=False)
            try:
                frame = item_frame(items)
                schema = merge_schema(self._schema, dict(frame.schema))
            except (ItemError, ValueError) as exc:
                message = f"cannot write {self._path!r}: {exc}"
                raise SinkError(message, path=self._path, retryable=False) from exc
            out = io.BytesIO()
            frame.write_ipc_stream(out, compression="uncompressed")
            await spool.append(out.getvalue())
            self._schema = schema
            self._rows += frame.height
            if self._rows >= self._row_group_size:
                try:
                    await self._flush(spool)
                except SinkError as exc:  # the batch is kept: the part is tried again later
                    logger.warning("%s: writing a part failed (%s); trying again later", self._path, exc)

    async def close(self) -> None:
        """Write the spool's last rows as a part, then stream all parts into `path`."""
        async with self._lock:
            spool, self._spool = self._spool, None
            if spool is None:
                return
            with anyio.CancelScope(shield=True):
                if self._rows:
                    await self._flush(spool)
                    spool = self._spool or spool
                    self._spool = None
                await spool.remove()
                await self._thread("write", self._merge)

    def __repr__(self) -> str:
        return f"ParquetSink({self._path!r})"

    async def _flush(self, spool: Spool) -> None:
        await spool.close()
        await self._thread("write", self._write_part, spool.path, self._part_path(self._number))
        await spool.remove()
        self._number += 1
        self._rows = 0
        self._spool = Spool(self._spool_path(self._number))
        await self._spool.open(keep=False)

    async def _thread(self, action: str, fn: Callable[..., _T], *args: object) -> _T:
        try:
            return await anyio.to_thread.run_sync(fn, *args)
        except (OSError, pl.exceptions.PolarsError) as exc:
            raise SinkError(f"cannot {action} {self._path!r}: {exc}", path=self._path) from exc

    def _spool_path(self, number: int) -> str:
        return os.path.join(self._parts, f"{number:06d}.arrows")

    def _part_path(self, number: int) -> str:
        return os.path.join(self._parts, f"{number:06d}.parquet")

    def _recover(self) -> tuple[int, int, dict[str, pl.DataType]]:
        """(the part to fill, rows in its spool, the columns so far); starts afresh unless `append`."""
        if not self._append:
            shutil.rmtree(self._parts, ignore_errors=True)
            if os.path.exists(self._path):
                os.unlink(self._path)
            os.makedirs(self._parts)
            return 0, 0, {}
        os.makedirs(self._parts, exist_ok=True)
        schema: dict[str, pl.DataType] = {}
        parts = self._part_files()
        for file in ([self._path] if os.path.exists(self._path) else []) + parts:
            schema = merge_schema(schema, dict(pl.read_parquet_schema(file)))
        number = int(os.path.basename(parts[-1])[:6]) + 1 if parts else 0
        for name in os.listdir(self._parts):
            if name.endswith(".arrows") and int(name[:6]) < number:  # its part was written
                os.unlink(os.path.join(self._parts, name))
        rows = 0
        for blob in iter_blobs(self._spool_path(number)):
            frame = pl.read_ipc_stream(io.BytesIO(blob))
            schema = merge_schema(schema, dict(frame.schema))
            rows += frame.height
        return number, rows, schema

    def _part_files(self) -> list[str]:
        names = sorted(n for n in os.listdir(self._parts) if n.endswith(".parquet"))
        return [os.path.join(self._parts, n) for n in names]

    def _write_part(self, spool_path: str, part_path: str) -> None:
        frames = [pl.read_ipc_stream(io.BytesIO(blob)) for blob in iter_blobs(spool_path)]
        temporary = part_path + ".tmp"
        concat_frames(frames).write_parquet(
            temporary, compression=self._compression, row_group_size=self._row_group_size
        )
        os.replace(temporary, part_path)

    def _merge(self) -> None:
        inputs = ([self._path] if os.path.exists(self._path) else []) + self._part_files()
        if len(inputs) == 1 and inputs[0] != self._path:
            os.replace(inputs[0], self._path)
        elif not inputs:
            pl.DataFrame(schema=self._schema).write_parquet(self._path, compression=self._compression)
        elif len(inputs) > 1:
            temporary = self._path + ".tmp"
            scans = [pl.scan_parquet(file) for file in inputs]
            pl.concat(scans, how="diagonal_relaxed").sink_parquet(
                temporary, compression=self._compression, row_group_size=self._row_group_size
            )
            os.replace(temporary, self._path)
        shutil.rmtree(self._parts, ignore_errors=True)
