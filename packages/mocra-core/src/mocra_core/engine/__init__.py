"""The engine: stages connected by queues, their composition and lifecycle."""

from __future__ import annotations

from ._builder import Mocra, MocraBuilder
from ._codec import EngineCodec
from ._engine import CrawlResult, Engine, Progress

__all__ = ("CrawlResult", "Engine", "EngineCodec", "Mocra", "MocraBuilder", "Progress")
