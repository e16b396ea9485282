"""`item_frame`: a batch of items as one polars DataFrame (a row per item, a column per field)."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

import msgspec
import polars as pl

from ._polars_types import declared_schema, merge_schema

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ("ItemError", "concat_frames", "item_frame")

_KEEP = (datetime.datetime, datetime.date, datetime.time, datetime.timedelta, bytes)  # polars takes these


class ItemError(ValueError):
    """An item that cannot be a row: not a record of fields, or a value polars cannot hold."""


def item_frame(items: Sequence[object]) -> pl.DataFrame:
    """One row per item: a msgspec Struct, a dataclass, a TypedDict or a dict (keys are column names).

    A record type's annotations fix its columns' types (see `mocra_core.sinks._polars_types`); the other
    columns take the type polars infers from all the batch's values. Columns are in first-seen order.

    Raises:
        ItemError: an item is not a record of fields, or its values do not fit one column type.

    Example:
        >>> import msgspec
        >>> class Book(msgspec.Struct):
        ...     title: str
        ...     price: float | None = None
        >>> item_frame([Book("Dune", 9), Book("Emma")]).schema
        Schema([('title', String), ('price', Float64)])
    """
    frames: list[pl.DataFrame] = []
    start = 0
    for end in range(1, len(items) + 1):  # consecutive items of one type make one frame
        if end == len(items) or type(items[end]) is not type(items[start]):
            frames.append(_frame_of_one_type(items, start, end))
            start = end
    return concat_frames(frames)


def concat_frames(frames: Sequence[pl.DataFrame]) -> pl.DataFrame:
    """The rows of all `frames` in order; a column missing from a frame is null there.

    Raises:
        ItemError: a column's types do not merge (`merge_schema`).
    """
    runs: list[list[pl.DataFrame]] = []  # consecutive frames of one schema: a cheap vertical concat
    for frame in frames:
        if runs and runs[-1][0].schema == frame.schema:
            runs[-1].append(frame)
        else:
            runs.append([frame])
    parts = [run[0] if len(run) == 1 else pl.concat(run, how="vertical") for run in runs]
    if not parts:
        return pl.DataFrame()
    if len(parts) == 1:
        return parts[0]
    schema: dict[str, pl.DataType] = {}
    for part in parts:
        schema = _merged(schema, part)
    return pl.concat(parts, how="diagonal_relaxed")


def _merged(schema: dict[str, pl.DataType], frame: pl.DataFrame) -> dict[str, pl.DataType]:
    try:
        return merge_schema(schema, dict(frame.schema))
    except ValueError as exc:
        raise ItemError(str(exc)) from exc


def _frame_of_one_type(items: Sequence[object], start: int, end: int) -> pl.DataFrame:
    records = [_record(index, items[index]) for index in range(start, end)]
    declared = declared_schema(type(items[start]))
    try:
        return pl.DataFrame(records, schema_overrides=declared, infer_schema_length=None)
    except (pl.exceptions.PolarsError, TypeError, ValueError, OverflowError) as exc:
        kind = type(items[start]).__name__
        raise ItemError(f"items {start}-{end - 1} ({kind}) do not fit columns: {exc}") from exc


def _record(index: int, item: object) -> dict[str, Any]:
    try:
        record = msgspec.to_builtins(item, builtin_types=_KEEP, str_keys=True)
    except (TypeError, ValueError, msgspec.EncodeError) as exc:
        raise ItemError(f"item {index} ({type(item).__name__}) cannot be encoded: {exc}") from exc
    if not isinstance(record, dict):
        raise ItemError(
            f"item {index} is a {type(item).__name__}, not a record of fields (a Struct, dataclass or dict)"
        )
    return record
