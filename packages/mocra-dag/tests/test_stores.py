"""One conformance suite for the run-state and lease stores, run on memory and LMDB."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import msgspec
import pytest

from mocra_dag import (
    LmdbLeaseStore,
    LmdbRunStateStore,
    MemoryRunStateStore,
    MissingExtra,
    NodeRecord,
    OutputNotSerialisable,
    StaleToken,
)

if TYPE_CHECKING:
    import pathlib

    from conftest import Stores

pytestmark = pytest.mark.anyio

OK = NodeRecord(status="succeeded", output={"rows": [1, 2, 3]}, attempts=1, at=5.0)


class Row(msgspec.Struct):
    id: int


async def test_records_round_trip(stores: Stores) -> None:
    state = stores.state()
    assert await state.begin("run", 1) == {}
    await state.commit("run", "a", OK, 1)
    await state.commit("run", "b", NodeRecord(status="failed", attempts=3, error="ValueError()"), 1)
    await state.commit("run", "b", NodeRecord(status="succeeded", output=None, attempts=1), 1)  # replaces
    await state.commit("run-2", "a", NodeRecord(status="succeeded", output="other run"), None)
    await state.commit("ru", "n", NodeRecord(status="succeeded", output="prefix of another id"), None)
    expected = {"a": OK, "b": NodeRecord(status="succeeded", output=None, attempts=1)}
    assert await state.load("run") == expected
    assert await state.begin("run", 1) == expected
    assert await state.load("unknown") == {}


async def test_delete_forgets_records_and_fence(stores: Stores) -> None:
    state = stores.state()
    await state.begin("run", 5)
    await state.commit("run", "a", OK, 5)
    await state.commit("run-b", "a", OK, 5)
    await state.delete("run")
    assert await state.load("run") == {}
    assert await state.begin("run", 1) == {}  # the fence went too
    assert await state.load("run-b") == {"a": OK}


async def test_stale_tokens_are_rejected(stores: Stores) -> None:
    state = stores.state()
    await state.begin("run", 3)
    with pytest.raises(StaleToken) as caught:
        await state.commit("run", "a", OK, 2)
    assert (caught.value.name, caught.value.token, caught.value.current) == ("run", 2, 3)
    with pytest.raises(StaleToken):
        await state.begin("run", 1)
    await state.commit("run", "a", OK, 4)  # a newer token raises the fence
    with pytest.raises(StaleToken):
        await state.commit("run", "a", OK, 3)
    await state.commit("run", "b", OK, None)  # unfenced writes are not checked
    await state.begin("other", 1)  # fences are per run
    assert set(await state.load("run")) == {"a", "b"}


async def test_fences_and_records_survive_a_restart(stores: Stores) -> None:
    state = stores.state()
    await state.begin("run", 7)
    await state.commit("run", "a", OK, 7)
    await stores.close()
    state = stores.state()
    assert await state.load("run") == {"a": OK}
    with pytest.raises(StaleToken):
        await state.commit("run", "a", OK, 6)


async def test_output_cache(stores: Stores) -> None:
    state = stores.state()
    assert await state.load_cached("k") is None
    await state.store_cached("k", OK)
    await state.store_cached("k2", NodeRecord(status="succeeded", output=None))
    assert await state.load_cached("k") == OK
    assert await state.load_cached("k2") == NodeRecord(status="succeeded", output=None)
    await stores.close()
    assert await stores.state().load_cached("k") == OK


async def test_outputs_come_back_as_msgpack_types(stores: Stores) -> None:
    state = stores.state()
    await state.commit("run", "a", NodeRecord(status="succeeded", output=[Row(1), Row(2)]), None)
    output = (await state.load("run"))["a"].output
    assert output == [{"id": 1}, {"id": 2}]
    assert msgspec.convert(output, list[Row]) == [Row(1), Row(2)]


async def test_unencodable_outputs_are_refused(stores: Stores) -> None:
    state = stores.state()
    with pytest.raises(OutputNotSerialisable, match="node 'a' of run 'r'"):
        await state.commit("r", "a", NodeRecord(status="succeeded", output=object()), None)
    with pytest.raises(OutputNotSerialisable, match="cache key 'k'"):
        await state.store_cached("k", NodeRecord(status="succeeded", output=iter([1, 2])))
    assert await state.load("r") == {} and await state.load_cached("k") is None


async def test_a_memory_store_may_keep_objects_as_they_are() -> None:
    state = MemoryRunStateStore(serialise=False)
    thing = object()
    await state.commit("r", "a", NodeRecord(status="succeeded", output=thing), 1)
    await state.store_cached("k", NodeRecord(status="succeeded", output=thing))
    assert (await state.load("r"))["a"].output is thing
    cached = await state.load_cached("k")
    assert cached is not None and cached.output is thing


async def test_leases_exclude_expire_renew_and_release(stores: Stores) -> None:
    leases, clock = stores.leases(), stores.clock
    first = await leases.acquire("run", owner="a", ttl=10)
    assert first is not None and first.owner == "a" and first.expires == clock.now() + 10
    assert await leases.acquire("run", owner="b", ttl=10) is None
    assert await leases.holder("run") == first

    clock.advance(9)
    renewed = await leases.renew(first, ttl=10)
    assert renewed.token == first.token and renewed.expires == clock.now() + 10
    clock.advance(9)
    assert await leases.acquire("run", owner="b", ttl=10) is None  # renewal kept it

    clock.advance(2)  # expired, unrenewed, nobody took it: renewing still works
    assert await leases.holder("run") is None
    again = await leases.renew(renewed, ttl=10)
    assert await leases.holder("run") == again

    await leases.release(again)
    assert await leases.holder("run") is None
    second = await leases.acquire("run", owner="b", ttl=10)
    assert second is not None and second.token > first.token


async def test_a_lease_taken_over_cannot_be_renewed_or_released(stores: Stores) -> None:
    leases, clock = stores.leases(), stores.clock
    old = await leases.acquire("run", owner="a", ttl=10)
    assert old is not None
    clock.advance(11)
    new = await leases.acquire("run", owner="b", ttl=10)
    assert new is not None and new.token > old.token
    with pytest.raises(StaleToken) as caught:
        await leases.renew(old, ttl=10)
    assert (caught.value.token, caught.value.current) == (old.token, new.token)
    await leases.release(old)  # a no-op: it is not ours any more
    assert await leases.holder("run") == new
    await leases.release(new)
    with pytest.raises(StaleToken):
        await leases.renew(new, ttl=10)  # released


async def test_tokens_increase_across_names_and_restarts(stores: Stores) -> None:
    tokens = []
    for name in ("a", "b", "c"):
        lease = await stores.leases().acquire(name, owner="x", ttl=10)
        assert lease is not None
        tokens.append(lease.token)
        await stores.close()  # a restart between each (LMDB); the same store (memory)
    assert tokens == sorted(set(tokens)) and tokens[0] >= 1


async def test_bad_ttl_is_refused(stores: Stores) -> None:
    with pytest.raises(ValueError, match="ttl"):
        await stores.leases().acquire("run", owner="a", ttl=0)


async def test_lmdb_state_and_leases_may_share_a_directory(tmp_path: pathlib.Path) -> None:
    async with LmdbRunStateStore(tmp_path) as state, LmdbLeaseStore(tmp_path) as leases:
        lease = await leases.acquire("run", owner="a", ttl=10)
        assert lease is not None
        await state.begin("run", lease.token)
        await state.commit("run", "a", OK, lease.token)
    async with LmdbRunStateStore(tmp_path) as state:
        assert (await state.load("run"))["a"] == OK
        assert state.path.endswith(tmp_path.name)
    with pytest.raises(RuntimeError, match="closed"):
        await state.load("run")


async def test_lmdb_store_refuses_nul_in_run_ids(tmp_path: pathlib.Path) -> None:
    async with LmdbRunStateStore(tmp_path) as state:
        with pytest.raises(ValueError, match="NUL"):
            await state.load("a\x00b")


def test_missing_lmdb_names_the_extra(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "lmdb", None)
    with pytest.raises(MissingExtra) as caught:
        LmdbRunStateStore(tmp_path / "state")
    assert caught.value.extra == "lmdb"
    assert "pip install 'mocra-dag[lmdb]'" in str(caught.value)
    assert "LmdbRunStateStore" in str(caught.value)
    with pytest.raises(ImportError):
        LmdbLeaseStore(tmp_path / "leases")
