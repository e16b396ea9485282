"""mocra_core: the runtime behind the `mocra` facade.

The public surface is curated here; subpackages (`http`, `queue`, `download`, `dedup`, `sinks`, `modules`,
`middleware`, `engine`, `config`, `observe`, `scope`, `testing`) hold the parts, one stage each.
"""

from __future__ import annotations

from ._errors import (
    BackendError,
    BackendUnavailable,
    BodyTooLarge,
    ConfigError,
    DownloadError,
    DownloadTimeout,
    HopRefused,
    InvalidURL,
    MissingExtra,
    MocraError,
    PoisonMessage,
    TooManyRedirects,
    UnfetchableURL,
    redact,
)
from ._lazy import load_optional
from .config import Settings
from .engine import CrawlResult, Mocra, MocraBuilder, Progress
from .http import Request, Response
from .modules import Account, Ctx, Login, LoginFailed, LoginSession, Module, Node, Seeds, Spider, TaskCtx
from .scope import Allow, Deny, LinkExtractor, Scope, UrlRules
from .sinks import CallbackSink, ChannelSink, CsvSink, DataSink, JsonlSink, channel, on_item

__version__ = "0.1.0"

__all__ = (
    "Account",
    "Allow",
    "BackendError",
    "BackendUnavailable",
    "BodyTooLarge",
    "CallbackSink",
    "ChannelSink",
    "ConfigError",
    "CrawlResult",
    "CsvSink",
    "Ctx",
    "DataSink",
    "Deny",
    "DownloadError",
    "DownloadTimeout",
    "HopRefused",
    "InvalidURL",
    "JsonlSink",
    "LinkExtractor",
    "Login",
    "LoginFailed",
    "LoginSession",
    "MissingExtra",
    "Mocra",
    "MocraBuilder",
    "MocraError",
    "Module",
    "Node",
    "PoisonMessage",
    "Progress",
    "Request",
    "Response",
    "Scope",
    "Seeds",
    "Settings",
    "Spider",
    "TaskCtx",
    "TooManyRedirects",
    "UnfetchableURL",
    "UrlRules",
    "__version__",
    "channel",
    "on_item",
    "redact",
)


def __getattr__(name: str) -> object:
    """`ClusterConfig` (for `MocraBuilder.cluster`) comes from `mocra_cluster`, imported on first use.

    It is not in `__all__`, so `from mocra_core import *` works without the `cluster` extra.
    """
    return load_optional(__name__, {"ClusterConfig": ("mocra_cluster", "cluster", "mocra_cluster")}, name)
