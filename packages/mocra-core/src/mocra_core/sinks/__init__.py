"""Item destinations: the `DataSink` protocol, JSONL and CSV files, callbacks and channels."""

from __future__ import annotations

from ._callback import CallbackSink, on_item
from ._channel import ChannelSink, channel
from ._csv import CsvSink
from ._data_sink import DataSink
from ._errors import SinkError
from ._fanout import FanoutSink
from ._jsonl import JsonlSink

__all__ = (
    "CallbackSink",
    "ChannelSink",
    "CsvSink",
    "DataSink",
    "FanoutSink",
    "JsonlSink",
    "SinkError",
    "channel",
    "on_item",
)
