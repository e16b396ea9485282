"""`DataFrameSink`: the run's items as one polars DataFrame (the `polars` extra)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from ._data_sink import SinkContext
from ._errors import SinkError
from ._frames import ItemError, item_frame
from ._polars_types import merge_schema

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ("DataFrameSink",)


class DataFrameSink(SinkContext):
    """Keeps the items it is given, in memory, as polars columns; `frame()` is the DataFrame of them all.

    Typed as `ParquetSink` types its columns: a record type's annotations give its columns' types
    (msgspec Structs, dataclasses, TypedDicts; see `mocra_core.sinks._polars_types`), polars infers the
    rest (dict items), and a column's type may widen between batches (Int64 → Float64, no value yet →
    any). Each batch becomes columns when written, so a batch that does not fit fails then, not later.

    The frame holds what this process's run wrote: a job of several workers has one frame per worker
    (for one file of them all, use `ParquetSink` on a shared path per worker, or a database). Memory is
    that of the columns, so for crawls larger than memory write Parquet and `pl.scan_parquet` it.

    Raises:
        SinkError: an item is not a record of fields, or a column's values do not fit one type (not
            retryable; nothing of the batch is kept).

    Example:
        >>> import anyio, msgspec
        >>> class Book(msgspec.Struct):
        ...     title: str
        ...     price: float | None = None
        >>> sink = DataFrameSink()
        >>> async def main() -> None:
        ...     async with sink:
        ...         await sink.write([Book("Dune", 9), Book("Emma")])
        >>> anyio.run(main)
        >>> sink.frame()
        shape: (2, 2)
        ┌───────┬───────┐
        │ title ┆ price │
        │ ---   ┆ ---   │
        │ str   ┆ f64   │
        ╞═══════╪═══════╡
        │ Dune  ┆ 9.0   │
        │ Emma  ┆ null  │
        └───────┴───────┘
    """

    def __init__(self) -> None:
        self._frames: list[pl.DataFrame] = []
        self._schema: dict[str, pl.DataType] = {}

    @property
    def schema(self) -> dict[str, pl.DataType]:
        """The columns so far (name → polars type), in order."""
        return dict(self._schema)

    async def write(self, items: Sequence[object]) -> None:
        """Turn the batch into columns and keep them."""
        if not items:
            return
        try:
            frame = item_frame(items)
            schema = merge_schema(self._schema, dict(frame.schema))
        except (ItemError, ValueError) as exc:
            raise SinkError(f"cannot keep the batch: {exc}", retryable=False) from exc
        self._frames.append(frame)
        self._schema = schema

    def frame(self) -> pl.DataFrame:
        """All items written so far, in order: one row per item, one column per field.

        A column an item lacks is null in its row. With no items: an empty frame (no columns).
        """
        if not self._frames:
            return pl.DataFrame()
        frame = pl.concat(self._frames, how="diagonal_relaxed", rechunk=True)
        self._frames = [frame]
        return frame

    def __len__(self) -> int:
        return sum(frame.height for frame in self._frames)

    def __repr__(self) -> str:
        return f"DataFrameSink({len(self)} rows)"
