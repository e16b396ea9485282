"""The parse stage: a lane per module runs its callbacks, items go through `ItemWriter` to the sinks."""

from __future__ import annotations

from ._items import ItemWriter, SinkWriteFailed
from ._stage import ParseStage

__all__ = ("ItemWriter", "ParseStage", "SinkWriteFailed")
