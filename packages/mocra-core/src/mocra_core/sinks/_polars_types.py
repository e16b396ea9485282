"""Polars column types of items: declared by a record type's annotations, and merged batch after batch.

How types map (a msgspec Struct's, a dataclass's or a TypedDict's field annotations):

| annotation | column |
| --- | --- |
| `str`, `uuid.UUID`, `decimal.Decimal` | `String` (a UUID as text, a Decimal as its exact text) |
| `int` / `float` / `bool` | `Int64` / `Float64` / `Boolean` |
| `bytes`, `bytearray` | `Binary` |
| `datetime` (aware, `Meta(tz=True)`) / naive (`tz=False`) | `Datetime("us", "UTC")` / `Datetime("us")` |
| `date`, `time`, `timedelta` | `Date`, `Time`, `Duration("us")` |
| an `Enum` or `Literal` of strings / of ints | `String` / `Int64` |
| `list[X]`, `set[X]`, `tuple[X, ...]` | `List(X)` |
| a nested Struct or dataclass | `Struct` of its fields |
| `X | None` | `X`, nullable |

Anything else (`Any`, `dict[...]`, other unions, a `datetime` without `tz`) and every key of a plain dict
takes the type polars infers from the values (`int` → Int64, a nested dict → Struct, ...).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec.inspect as mi
import polars as pl

if TYPE_CHECKING:
    from collections.abc import Mapping

    from polars._typing import PolarsDataType

__all__ = ("ColumnConflict", "declared_schema", "merge_schema")

_RECORDS = (mi.StructType, mi.DataclassType, mi.TypedDictType)
_SEQUENCES = (mi.ListType, mi.SetType, mi.FrozenSetType, mi.VarTupleType)
_SIMPLE: dict[type[mi.Type], pl.DataType] = {
    mi.StrType: pl.String(),
    mi.IntType: pl.Int64(),
    mi.FloatType: pl.Float64(),
    mi.BoolType: pl.Boolean(),
    mi.BytesType: pl.Binary(),
    mi.ByteArrayType: pl.Binary(),
    mi.DateType: pl.Date(),
    mi.TimeType: pl.Time(),
    mi.TimeDeltaType: pl.Duration("us"),
    mi.DecimalType: pl.String(),
    mi.UUIDType: pl.String(),
}
_CACHE: dict[type, dict[str, pl.DataType] | None] = {}


class ColumnConflict(ValueError):
    """Two batches give a column types that do not merge (text and a list, a Struct and a number, ...)."""

    def __init__(self, column: str, old: pl.DataType, new: pl.DataType) -> None:
        super().__init__(f"column {column!r} holds {old} and now {new}, which do not merge")
        self.column = column


def declared_schema(cls: type) -> dict[str, pl.DataType] | None:
    """The columns a record type's annotations declare (name as encoded → polars type); `None` for others.

    Fields whose annotation does not say one polars type are left out (polars infers them).

    Example:
        >>> import msgspec
        >>> class Book(msgspec.Struct):
        ...     title: str
        ...     tags: list[str] = []
        ...     price: float | None = None
        ...     extra: dict[str, int] = {}
        >>> declared_schema(Book)
        {'title': String, 'tags': List(String), 'price': Float64}
        >>> declared_schema(dict) is None
        True
    """
    if cls in _CACHE:
        return _CACHE[cls]
    try:
        info: mi.Type | None = mi.type_info(cls)
    except Exception:  # an annotation msgspec cannot resolve: polars infers the types
        info = None
    schema = _fields(info) if isinstance(info, _RECORDS) else None
    _CACHE[cls] = schema
    return schema


def merge_schema(schema: Mapping[str, pl.DataType], new: Mapping[str, pl.DataType]) -> dict[str, pl.DataType]:
    """The columns of both, each of a type that holds both sides' values without loss.

    A `Null` column (no value yet) takes the other type; integers and floats give `Float64`; text and
    another scalar give `String` (as polars does within a batch); lists merge their items' types and
    Structs their fields. Anything else (a list and text, a Struct and a number, an aware and a naive
    datetime) must be the same type.

    Raises:
        ColumnConflict: a column's types do not merge (naming it).

    Example:
        >>> merge_schema({"a": pl.Int64(), "b": pl.Null()}, {"a": pl.Float64(), "c": pl.String()})
        {'a': Float64, 'b': Null, 'c': String}
        >>> merge_schema({"a": pl.List(pl.String)}, {"a": pl.Int64()})
        Traceback (most recent call last):
        ...
        mocra_core.sinks._polars_types.ColumnConflict: column 'a' holds List(String) and now Int64, ...
    """
    merged = dict(schema)
    for name, dtype in new.items():
        old = merged.get(name)
        if old is None:
            merged[name] = dtype
            continue
        found = _merge(old, dtype)
        if found is None:
            raise ColumnConflict(name, old, dtype)
        merged[name] = found
    return merged


def _merge(a: pl.DataType, b: pl.DataType) -> pl.DataType | None:
    if a == b:
        return a
    if isinstance(a, pl.Null):
        return b
    if isinstance(b, pl.Null):
        return a
    if a.is_numeric() and b.is_numeric():
        return pl.Float64() if a.is_float() or b.is_float() else pl.Int64()
    if isinstance(a, pl.String) or isinstance(b, pl.String):  # a number, date, ... as text: lossless
        return None if a.is_nested() or b.is_nested() else pl.String()
    if isinstance(a, pl.List) and isinstance(b, pl.List):
        inner = _merge(_instance(a.inner), _instance(b.inner))
        return None if inner is None else pl.List(inner)
    if isinstance(a, pl.Struct) and isinstance(b, pl.Struct):
        fields = {f.name: _instance(f.dtype) for f in a.fields}
        for field in b.fields:
            old = fields.get(field.name)
            found = _instance(field.dtype) if old is None else _merge(old, _instance(field.dtype))
            if found is None:
                return None
            fields[field.name] = found
        return pl.Struct(fields)
    return None


def _instance(dtype: PolarsDataType) -> pl.DataType:
    return dtype if isinstance(dtype, pl.DataType) else dtype()


def _fields(info: Any) -> dict[str, pl.DataType]:
    schema: dict[str, pl.DataType] = {}
    for field in info.fields:
        dtype = _dtype(field.type)
        if dtype is not None:
            schema[field.encode_name] = dtype
    return schema


def _dtype(info: mi.Type) -> pl.DataType | None:
    simple = _SIMPLE.get(type(info))
    if simple is not None:
        return simple
    if isinstance(info, mi.DateTimeType):
        return None if info.tz is None else pl.Datetime("us", "UTC" if info.tz else None)
    if isinstance(info, mi.UnionType):
        kinds = [t for t in info.types if not isinstance(t, mi.NoneType)]
        return _dtype(kinds[0]) if len(kinds) == 1 else None
    if isinstance(info, _SEQUENCES):
        inner = _dtype(info.item_type)
        return None if inner is None else pl.List(inner)
    if isinstance(info, mi.EnumType | mi.LiteralType):
        values = [m.value for m in info.cls] if isinstance(info, mi.EnumType) else list(info.values)
        if values and all(isinstance(v, str) for v in values):
            return pl.String()
        if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            return pl.Int64()
        return None
    if isinstance(info, _RECORDS):
        fields = _fields(info)
        return pl.Struct(fields) if len(fields) == len(info.fields) else None
    return None
