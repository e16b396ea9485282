"""MemoryStateStore: ordered scans, transactions that roll back, snapshots that restore exactly."""

from __future__ import annotations

import msgspec
import pytest

from mocra_cluster import MemoryStateStore


def test_scan_returns_the_prefix_in_key_order() -> None:
    store = MemoryStateStore()
    for key in (b"k/b", b"l/a", b"k/a", b"k", b"k/c"):
        store.put(key, key.upper())
    assert store.scan(b"k/") == [(b"k/a", b"K/A"), (b"k/b", b"K/B"), (b"k/c", b"K/C")]
    assert store.delete(b"k/b") is True
    assert store.delete(b"k/b") is False
    assert [key for key, _ in store.scan(b"")] == [b"k", b"k/a", b"k/c", b"l/a"]


def test_an_exception_rolls_the_transaction_back() -> None:
    store = MemoryStateStore()
    store.put(b"a", b"1")
    store.put(b"b", b"2")
    before = store.snapshot()
    with pytest.raises(RuntimeError), store.transaction(write=True):
        store.put(b"a", b"changed")
        store.delete(b"b")
        store.put(b"c", b"new")
        with store.transaction(write=True):  # nested: joins the outer one
            store.put(b"d", b"inner")
        raise RuntimeError("boom")
    assert store.snapshot() == before
    assert store.scan(b"") == [(b"a", b"1"), (b"b", b"2")]


def test_a_committed_transaction_keeps_its_writes() -> None:
    store = MemoryStateStore()
    with store.transaction(write=True):
        store.put(b"a", b"1")
    with pytest.raises(KeyError), store.transaction(write=True):
        raise KeyError("later failure")
    assert store.get(b"a") == b"1"


def test_snapshot_restore_is_exact_and_independent_of_insertion_order() -> None:
    one, two = MemoryStateStore(), MemoryStateStore()
    for key in (b"x", b"a", b"m"):
        one.put(key, key * 2)
    for key in (b"m", b"x", b"a"):
        two.put(key, key * 2)
    assert one.snapshot() == two.snapshot()
    copy = MemoryStateStore()
    copy.put(b"stale", b"gone after restore")
    copy.restore(one.snapshot())
    assert copy.scan(b"") == one.scan(b"")
    assert len(copy) == 3


def test_restore_refuses_garbage() -> None:
    with pytest.raises(msgspec.DecodeError):
        MemoryStateStore().restore(b"\x01not a snapshot")
