"""mocra: queue-driven web crawling that runs on one process or a cluster, unchanged.

Example:
    >>> import mocra
    >>> "Spider" in mocra.__all__ and "Mocra" in mocra.__all__
    True
"""

from __future__ import annotations

from mocra_core import (
    Account,
    CallbackSink,
    ChannelSink,
    ConfigError,
    CrawlResult,
    CsvSink,
    Ctx,
    DataSink,
    DownloadError,
    InvalidURL,
    JsonlSink,
    Login,
    LoginSession,
    MissingExtra,
    Mocra,
    MocraBuilder,
    MocraError,
    Module,
    Node,
    Progress,
    Request,
    Response,
    Seeds,
    Settings,
    Spider,
    TaskCtx,
    channel,
    on_item,
)

__version__ = "0.1.0"

__all__ = (
    "Account",
    "CallbackSink",
    "ChannelSink",
    "ConfigError",
    "CrawlResult",
    "CsvSink",
    "Ctx",
    "DataSink",
    "DownloadError",
    "InvalidURL",
    "JsonlSink",
    "Login",
    "LoginSession",
    "MissingExtra",
    "Mocra",
    "MocraBuilder",
    "MocraError",
    "Module",
    "Node",
    "Progress",
    "Request",
    "Response",
    "Seeds",
    "Settings",
    "Spider",
    "TaskCtx",
    "__version__",
    "channel",
    "on_item",
)


_SINKS_WITH_EXTRAS = frozenset({"SqlSink", "ParquetSink", "DataFrameSink", "XlsxSink"})


def __getattr__(name: str) -> object:
    """Names whose code needs an extra, imported on first use.

    `ClusterConfig` (`cluster`), `SqlSink` (`sql`), `ParquetSink` and `DataFrameSink` (`polars`),
    `XlsxSink` (`excel`).

    Example:
        >>> from mocra import ClusterConfig, Mocra, SqlSink
        >>> node = ClusterConfig.bootstrap("node-1", "127.0.0.1:7100", "/tmp/node-1", password="pw")
        >>> Mocra.builder().cluster(node).cluster_config is node
        True
        >>> SqlSink("sqlite:///items.db", "books", key="id")
        SqlSink('sqlite:///items.db', 'books', key=('id',))
    """
    if name == "ClusterConfig":
        import mocra_core

        return mocra_core.ClusterConfig
    if name in _SINKS_WITH_EXTRAS:
        from mocra_core import sinks

        return getattr(sinks, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
