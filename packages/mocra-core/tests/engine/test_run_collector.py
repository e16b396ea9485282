"""`run_collector`: the heap is frozen and young collections rarer for the runs only; what was held back is
collected after, and overlapping runs keep the setting until the last one ends."""

from __future__ import annotations

import gc
import weakref

import pytest

from mocra_core.engine._run_collector import YOUNG_THRESHOLD, run_collector


class _Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the collector frees it


def test_cyclic_garbage_from_before_the_run_is_collected_after_it() -> None:
    node = _Node()
    ref = weakref.ref(node)
    with run_collector():
        del node
        gc.collect()
        assert ref() is not None  # frozen: not scanned during the run
    gc.collect()
    assert ref() is None
    assert gc.get_freeze_count() == 0


def test_the_heap_is_unfrozen_and_the_thresholds_restored_when_the_run_fails() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), run_collector():
        assert gc.get_threshold()[0] >= YOUNG_THRESHOLD
        raise RuntimeError("boom")
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == before


def test_overlapping_runs_keep_it_until_the_last_one_ends() -> None:
    before = gc.get_threshold()
    first, second = run_collector(), run_collector()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)  # the first run ends while the second goes on
    assert gc.get_freeze_count() > 0
    assert gc.get_threshold()[0] >= YOUNG_THRESHOLD
    second.__exit__(None, None, None)
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == before


def test_collection_turned_off_stays_off() -> None:
    before = gc.get_threshold()
    gc.set_threshold(0)
    try:
        with run_collector():
            assert gc.get_threshold()[0] == 0
    finally:
        gc.set_threshold(*before)
