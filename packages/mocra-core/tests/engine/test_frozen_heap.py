"""`frozen_heap`: the heap is frozen for the run only, and what it held back is collected after."""

from __future__ import annotations

import gc
import weakref

import pytest

from mocra_core.engine._frozen_heap import frozen_heap


class _Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the collector frees it


def test_cyclic_garbage_from_before_the_run_is_collected_after_it() -> None:
    node = _Node()
    ref = weakref.ref(node)
    with frozen_heap():
        del node
        gc.collect()
        assert ref() is not None  # frozen: not scanned during the run
    gc.collect()
    assert ref() is None
    assert gc.get_freeze_count() == 0


def test_the_heap_is_unfrozen_when_the_run_fails() -> None:
    with pytest.raises(RuntimeError), frozen_heap():
        raise RuntimeError("boom")
    assert gc.get_freeze_count() == 0
