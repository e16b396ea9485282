"""Item destinations: the `DataSink` protocol, files, DataFrames, callbacks, channels and SQL tables.

Files: JSONL, CSV, Parquet and Excel (`.xlsx`).

`SqlSink` needs the `sql` extra (SQLAlchemy), `ParquetSink` and `DataFrameSink` the `polars` extra, and
`XlsxSink` the `excel` extra (openpyxl); each is imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import load_optional
from ._callback import CallbackSink, on_item
from ._channel import ChannelSink, channel
from ._csv import CsvSink
from ._data_sink import DataSink, FencedSink
from ._errors import SinkError
from ._fanout import FanoutSink
from ._jsonl import JsonlSink

if TYPE_CHECKING:
    from ._dataframe import DataFrameSink
    from ._parquet import ParquetSink
    from ._sql import SqlSink
    from ._xlsx import XlsxSink

_LAZY = {  # name -> (module, extra, the package it installs)
    "SqlSink": ("._sql", "sql", "sqlalchemy"),
    "ParquetSink": ("._parquet", "polars", "polars"),
    "DataFrameSink": ("._dataframe", "polars", "polars"),
    "XlsxSink": ("._xlsx", "excel", "openpyxl"),
}

__all__ = (
    "CallbackSink",
    "ChannelSink",
    "CsvSink",
    "DataFrameSink",
    "DataSink",
    "FanoutSink",
    "FencedSink",
    "JsonlSink",
    "ParquetSink",
    "SinkError",
    "SqlSink",
    "XlsxSink",
    "channel",
    "on_item",
)


def __getattr__(name: str) -> object:
    """Import `SqlSink`, `ParquetSink`, `DataFrameSink` and `XlsxSink` on first use (they need extras)."""
    return load_optional(__name__, _LAZY, name)
