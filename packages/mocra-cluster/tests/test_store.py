"""MemoryStateStore: ordered scans, transactions that roll back, snapshots that restore exactly."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator

import msgspec
import pytest

from mocra_cluster import ClusterClosed, LmdbStateStore, MemoryStateStore, StateStore


@pytest.fixture(params=["memory", "lmdb"])
def store(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[StateStore]:
    if request.param == "memory":
        yield MemoryStateStore()
        return
    found = LmdbStateStore(tmp_path / "state", sync=False)
    try:
        yield found
    finally:
        found.close()


def test_scan_returns_the_prefix_in_key_order(store: StateStore) -> None:
    for key in (b"k/b", b"l/a", b"k/a", b"k", b"k/c"):
        store.put(key, key.upper())
    assert store.scan(b"k/") == [(b"k/a", b"K/A"), (b"k/b", b"K/B"), (b"k/c", b"K/C")]
    assert store.delete(b"k/b") is True
    assert store.delete(b"k/b") is False
    assert [key for key, _ in store.scan(b"")] == [b"k", b"k/a", b"k/c", b"l/a"]


def test_an_exception_rolls_the_transaction_back(store: StateStore) -> None:
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
    with store.transaction(write=True):
        assert store.get(b"c") is None  # a later transaction sees nothing of the aborted one


def test_a_committed_transaction_keeps_its_writes(store: StateStore) -> None:
    with store.transaction(write=True):
        store.put(b"a", b"1")
    with pytest.raises(KeyError), store.transaction(write=True):
        raise KeyError("later failure")
    assert store.get(b"a") == b"1"


def test_snapshot_restore_is_exact_and_independent_of_insertion_order(store: StateStore) -> None:
    one, two = store, MemoryStateStore()
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
    store.restore(MemoryStateStore().snapshot())
    assert store.scan(b"") == []


def test_lmdb_store_keeps_data_across_reopen_and_grows_its_map(tmp_path: pathlib.Path) -> None:
    store = LmdbStateStore(tmp_path, map_size=64 << 10, sync=False)
    big = b"x" * 4000

    def fill() -> None:
        with store.transaction(write=True):
            for i in range(100):
                store.put(b"big/%03d" % i, big)

    store.atomic(fill)  # 400 kB into a 64 kB map: it doubles until the write fits
    store.close()
    again = LmdbStateStore(tmp_path, sync=False)
    try:
        assert len(again.scan(b"big/")) == 100
        with pytest.raises(RuntimeError, match="read-only"), again.transaction(write=False):
            again.put(b"a", b"1")
    finally:
        again.close()
    with pytest.raises(ClusterClosed):
        again.get(b"a")


def test_restore_refuses_garbage() -> None:
    with pytest.raises(msgspec.DecodeError):
        MemoryStateStore().restore(b"\x01not a snapshot")
