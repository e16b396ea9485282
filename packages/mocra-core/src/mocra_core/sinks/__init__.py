"""Item destinations: the `DataSink` protocol, JSONL and CSV files, callbacks, channels and SQL tables.

`SqlSink` needs the `sql` extra (SQLAlchemy) and is imported on first use.
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
    from ._sql import SqlSink

_LAZY = {"SqlSink": ("._sql", "sql", "sqlalchemy")}  # name -> (module, extra, the package it installs)

__all__ = (
    "CallbackSink",
    "ChannelSink",
    "CsvSink",
    "DataSink",
    "FanoutSink",
    "FencedSink",
    "JsonlSink",
    "SinkError",
    "SqlSink",
    "channel",
    "on_item",
)


def __getattr__(name: str) -> object:
    """Import `SqlSink` on first use, so the package works without the `sql` extra."""
    return load_optional(__name__, _LAZY, name)
