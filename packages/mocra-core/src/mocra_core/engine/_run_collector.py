"""`run_collector`: the garbage collector set for a crawl: start-up heap frozen, young collections rarer."""

from __future__ import annotations

import contextlib
import gc
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ("YOUNG_THRESHOLD", "run_collector")

YOUNG_THRESHOLD = 5_000
"""Allocations between two young collections while a run is on (CPython's default is 700)."""

_runs = 0  # runs of this process inside `run_collector` now
_threshold: tuple[int, int, int] = gc.get_threshold()  # the thresholds to restore when the last run ends


@contextlib.contextmanager
def run_collector() -> Iterator[None]:
    """Tune the collector for the block: freeze the heap (`gc.freeze`), collect the young generation rarely.

    The modules, settings and spiders loaded before a crawl are scanned by every full collection of the
    run otherwise; frozen, each collection walks only what the crawl made (the bench crawl: ~9 % less CPU
    per page). A crawl makes many short-lived objects in bursts (a response, its requests, its items),
    nearly all freed by reference counting: at CPython's default threshold the bench crawl ran 1,300
    collections for 0.40 s of its 7.5 s of CPU; at `YOUNG_THRESHOLD`, 31 for 0.05 s
    (`benchmarks/README.md`). Only the collector's pace changes: cyclic garbage is still collected, a
    little later. Overlapping runs of one process share the setting: the last to end restores the
    thresholds the process had and unfreezes the heap. A threshold of 0 (collection off) is kept.

    Example:
        >>> before = gc.get_threshold()
        >>> with run_collector():
        ...     gc.get_freeze_count() > 0, gc.get_threshold()[0] >= YOUNG_THRESHOLD
        (True, True)
        >>> gc.get_freeze_count(), gc.get_threshold() == before
        (0, True)
    """
    global _runs, _threshold
    if _runs == 0:
        _threshold = gc.get_threshold()
        young, older, oldest = _threshold
        gc.set_threshold(max(young, YOUNG_THRESHOLD) if young else 0, older, oldest)
        gc.freeze()
    _runs += 1
    try:
        yield
    finally:
        _runs -= 1
        if _runs == 0:
            gc.unfreeze()
            gc.set_threshold(*_threshold)
