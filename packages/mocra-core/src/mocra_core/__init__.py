"""mocra_core: the runtime behind the `mocra` facade.

The public surface is curated here; subpackages (`http`, `queue`, `download`, `dedup`, `sinks`, `modules`,
`middleware`, `engine`, `config`, `observe`, `testing`) hold the parts, one stage each.
"""

from __future__ import annotations

from ._errors import (
    BodyTooLarge,
    ConfigError,
    DownloadError,
    DownloadTimeout,
    InvalidURL,
    MissingExtra,
    MocraError,
    TooManyRedirects,
)
from .config import Settings
from .engine import CrawlResult, Mocra, MocraBuilder, Progress
from .http import Request, Response
from .modules import Ctx, Seeds, Spider
from .sinks import CallbackSink, ChannelSink, CsvSink, DataSink, JsonlSink, channel, on_item

__version__ = "0.1.0"

__all__ = (
    "BodyTooLarge",
    "CallbackSink",
    "ChannelSink",
    "ConfigError",
    "CrawlResult",
    "CsvSink",
    "Ctx",
    "DataSink",
    "DownloadError",
    "DownloadTimeout",
    "InvalidURL",
    "JsonlSink",
    "MissingExtra",
    "Mocra",
    "MocraBuilder",
    "MocraError",
    "Progress",
    "Request",
    "Response",
    "Seeds",
    "Settings",
    "Spider",
    "TooManyRedirects",
    "__version__",
    "channel",
    "on_item",
)
