"""Item destinations: the `DataSink` protocol, JSONL and CSV files, callbacks, channels and SQL tables.

`SqlSink` needs the `sql` extra (SQLAlchemy) and is imported on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .._errors import MissingExtra
from ._callback import CallbackSink, on_item
from ._channel import ChannelSink, channel
from ._csv import CsvSink
from ._data_sink import DataSink
from ._errors import SinkError
from ._fanout import FanoutSink
from ._jsonl import JsonlSink

if TYPE_CHECKING:
    from ._sql import SqlSink

__all__ = (
    "CallbackSink",
    "ChannelSink",
    "CsvSink",
    "DataSink",
    "FanoutSink",
    "JsonlSink",
    "SinkError",
    "SqlSink",
    "channel",
    "on_item",
)


def __getattr__(name: str) -> object:
    """Import `SqlSink` on first use, so the package works without the `sql` extra."""
    if name != "SqlSink":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        cls: type = importlib.import_module("._sql", __name__).SqlSink
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.partition(".")[0] != "sqlalchemy":
            raise
        raise MissingExtra("sql", f"{__name__}.SqlSink") from exc
    cls.__module__ = __name__
    globals()[name] = cls
    return cls
