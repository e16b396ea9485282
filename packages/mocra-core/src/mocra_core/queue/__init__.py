"""Queues between crawl stages: the `QueueBackend` protocol, its backends and `open_queue`.

Networked backends need their extra and are imported on first use: `RedisStreamsQueue` (`redis`),
`NatsJetStreamQueue` (`nats`), `KafkaQueue` (`kafka`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import load_optional
from ._backend import QueueBackend
from ._codec import Codec, MsgpackCodec
from ._delivery import DeadLetter, Delivery
from ._lmdb import LmdbQueue
from ._memory import MemoryQueue
from ._open import open_queue
from ._spill import SpillingQueue

if TYPE_CHECKING:
    from ._kafka import KafkaQueue
    from ._nats import NatsJetStreamQueue
    from ._redis import RedisStreamsQueue

# name -> (module, extra, the driver package a missing extra leaves out)
_LAZY = {
    "RedisStreamsQueue": ("._redis", "redis", "redis"),
    "NatsJetStreamQueue": ("._nats", "nats", "nats"),
    "KafkaQueue": ("._kafka", "kafka", "aiokafka"),
}

__all__ = (
    "Codec",
    "DeadLetter",
    "Delivery",
    "KafkaQueue",
    "LmdbQueue",
    "MemoryQueue",
    "MsgpackCodec",
    "NatsJetStreamQueue",
    "QueueBackend",
    "RedisStreamsQueue",
    "SpillingQueue",
    "open_queue",
)

for _name in __all__:
    if _name not in _LAZY:
        globals()[_name].__module__ = __name__
del _name


def __getattr__(name: str) -> object:
    """Import a networked backend on first use, so the package works without its extra."""
    return load_optional(__name__, _LAZY, name)
