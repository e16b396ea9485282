"""Settings: typed defaults, optional TOML file, `MOCRA_*` environment variables and `-s key=value`."""

from __future__ import annotations

from ..dedup._settings import DedupSettings
from ._admin import AdminSettings
from ._load import load, parse_override
from ._settings import (
    CoordinationSettings,
    CrawlSettings,
    KafkaQueueSettings,
    NatsQueueSettings,
    ProxySettings,
    QueueSettings,
    RedisQueueSettings,
    Settings,
    SinkSettings,
    StoreSettings,
)

__all__ = (
    "AdminSettings",
    "CoordinationSettings",
    "CrawlSettings",
    "DedupSettings",
    "KafkaQueueSettings",
    "NatsQueueSettings",
    "ProxySettings",
    "StoreSettings",
    "QueueSettings",
    "RedisQueueSettings",
    "Settings",
    "SinkSettings",
    "load",
    "parse_override",
)
