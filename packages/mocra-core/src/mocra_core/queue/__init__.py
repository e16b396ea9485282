"""Queues between crawl stages: the `QueueBackend` protocol, its backends and `open_queue`."""

from __future__ import annotations

from ._backend import QueueBackend
from ._codec import Codec, MsgpackCodec
from ._delivery import DeadLetter, Delivery
from ._lmdb import LmdbQueue
from ._memory import MemoryQueue
from ._open import open_queue

__all__ = (
    "Codec",
    "DeadLetter",
    "Delivery",
    "LmdbQueue",
    "MemoryQueue",
    "MsgpackCodec",
    "QueueBackend",
    "open_queue",
)

for _name in __all__:
    globals()[_name].__module__ = __name__
del _name
