"""Spreadsheet cells of item values, and the spool codec that keeps their types until the sheet is written.

What a cell holds, by the item's value:

| value | cell |
| --- | --- |
| `None` | empty |
| `str` | text (characters XML cannot hold, U+0000-U+001F but tab and newlines, become U+FFFD; past
  32,767 characters, Excel's limit, it is cut); text beginning with `=` stays text, never a formula |
| `bool`, `int`, `float` | a number (an integer of 16 digits or more, NaN and infinities: text) |
| naive `datetime`, `date`, `time`; `timedelta` | a date, time or duration |
| aware `datetime` or `time` | ISO 8601 text (Excel has no time zones) |
| a list, dict or nested Struct | JSON text |
| anything else (UUID, Decimal, bytes, enum) | msgspec's form: text (bytes base64) or the enum's value |
"""

from __future__ import annotations

import datetime
import logging
import math
import re
from typing import Any

import msgspec

__all__ = ("MAX_TEXT", "cell", "decode_rows", "encode_rows")

logger = logging.getLogger(__name__)

MAX_TEXT = 32_767
"""The most characters an Excel cell holds."""

_ILLEGAL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
_BIG = 10**15  # Excel keeps 15 significant digits
_JSON = msgspec.json.Encoder()
_DATETIME, _DATE, _TIME, _TIMEDELTA = 1, 2, 3, 4
_ENCODER = msgspec.msgpack.Encoder()


def cell(value: object) -> object:
    r"""What a spreadsheet cell holds for `value` (one of `msgspec.to_builtins`'s values, dates kept).

    Example:
        >>> cell(["a", 1]), cell(float("nan")), cell(10**16), cell("a\x00b")
        ('["a",1]', 'nan', '10000000000000000', 'a�b')
    """
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, int):
        return value if -_BIG < value < _BIG else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, datetime.datetime | datetime.time):
        return value if value.tzinfo is None else value.isoformat()
    if isinstance(value, datetime.date | datetime.timedelta):
        return value
    return _text(_JSON.encode(value).decode())


def encode_rows(columns: list[str], rows: list[list[object]]) -> bytes:
    """One spool blob: the columns so far and rows of `cell` values (dates kept as dates).

    Example:
        >>> decode_rows(encode_rows(["a"], [[datetime.date(2024, 5, 1)]]))
        (['a'], [[datetime.date(2024, 5, 1)]])
    """
    return _ENCODER.encode([columns, [[_packed(value) for value in row] for row in rows]])


def decode_rows(blob: bytes) -> tuple[list[str], list[list[Any]]]:
    """The columns and rows of a blob of `encode_rows`."""
    columns, rows = msgspec.msgpack.decode(blob, ext_hook=_unpacked)
    return columns, rows


def _text(value: str) -> str:
    if _ILLEGAL.search(value):
        value = _ILLEGAL.sub("\ufffd", value)
    if len(value) > MAX_TEXT:
        logger.warning("a value of %d characters was cut to Excel's %d", len(value), MAX_TEXT)
        value = value[:MAX_TEXT]
    return value


def _packed(value: object) -> object:
    if isinstance(value, datetime.datetime):
        return msgspec.msgpack.Ext(_DATETIME, value.isoformat().encode())
    if isinstance(value, datetime.date):
        return msgspec.msgpack.Ext(_DATE, value.isoformat().encode())
    if isinstance(value, datetime.time):
        return msgspec.msgpack.Ext(_TIME, value.isoformat().encode())
    if isinstance(value, datetime.timedelta):
        return msgspec.msgpack.Ext(_TIMEDELTA, str(value // datetime.timedelta(microseconds=1)).encode())
    return value


def _unpacked(code: int, data: memoryview) -> object:
    text = bytes(data).decode()
    if code == _DATETIME:
        return datetime.datetime.fromisoformat(text)
    if code == _DATE:
        return datetime.date.fromisoformat(text)
    if code == _TIME:
        return datetime.time.fromisoformat(text)
    if code == _TIMEDELTA:
        return datetime.timedelta(microseconds=int(text))
    raise ValueError(f"unknown spool value code {code}")
