"""Queues between crawl stages: the `QueueBackend` protocol, its backends and `open_queue`.

The backends live in `mocra_core.backends` (one folder per driver) and are imported on first use, so
this package imports none of them: `MemoryQueue`, `LmdbQueue`, `SpillingQueue` (memory spilling to
LMDB), and, with their extra, `RedisStreamsQueue` (`redis`), `NatsJetStreamQueue` (`nats`),
`KafkaQueue` (`kafka`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import load_optional
from ._backend import QueueBackend
from ._codec import Codec, MsgpackCodec
from ._delivery import DeadLetter, Delivery
from ._fence import Fence
from ._open import open_queue

if TYPE_CHECKING:
    from ..backends.kafka._queue import KafkaQueue
    from ..backends.lmdb._queue import LmdbQueue
    from ..backends.memory._queue import MemoryQueue
    from ..backends.nats._queue import NatsJetStreamQueue
    from ..backends.redis._queue import RedisStreamsQueue
    from ._spill import SpillingQueue

# name -> (module, extra, the driver package a missing extra leaves out; "" for none)
_LAZY = {
    "MemoryQueue": ("..backends.memory._queue", "", ""),
    "LmdbQueue": ("..backends.lmdb._queue", "", ""),
    "SpillingQueue": ("._spill", "", ""),
    "RedisStreamsQueue": ("..backends.redis._queue", "redis", "redis"),
    "NatsJetStreamQueue": ("..backends.nats._queue", "nats", "nats"),
    "KafkaQueue": ("..backends.kafka._queue", "kafka", "aiokafka"),
}

__all__ = (
    "Codec",
    "DeadLetter",
    "Delivery",
    "Fence",
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
    """Import a backend on first use: the package works without the extras, and imports no driver."""
    return load_optional(__name__, _LAZY, name)
