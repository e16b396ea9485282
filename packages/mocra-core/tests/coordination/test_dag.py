"""`mocra_dag`'s run guard and run state on a `Coordination`: the stores' contracts, then scheduler runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
import msgspec
import pytest

from mocra_core.coordination import CoordinationLeaseStore, CoordinationRunStateStore, LocalCoordination
from mocra_dag import (
    Graph,
    Inputs,
    ManualClock,
    NodeRecord,
    NodeStatus,
    OutputNotSerialisable,
    RunAlreadyActive,
    RunFailed,
    RunGuard,
    Scheduler,
    StaleToken,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from conftest import FakeClock
    from mocra_core.coordination import Coordination

pytestmark = pytest.mark.anyio

OK = NodeRecord(status="succeeded", output={"rows": [1, 2, 3]}, attempts=1, at=5.0)


# ---------------------------------------------------------------------- the lease store


async def test_leases_exclude_expire_renew_and_release(coordination: Coordination, clock: FakeClock) -> None:
    leases = CoordinationLeaseStore(coordination)
    first = await leases.acquire("run", owner="a", ttl=10)
    assert first is not None and first.owner == "a" and first.expires == clock.now() + 10
    assert await leases.acquire("run", owner="b", ttl=10) is None
    assert await leases.holder("run") == first

    clock.advance(9)
    renewed = await leases.renew(first, ttl=10)
    assert renewed.token == first.token and renewed.expires == clock.now() + 10
    clock.advance(11)  # expired, unrenewed, nobody took it: renewing still works
    assert await leases.holder("run") is None
    again = await leases.renew(renewed, ttl=10)
    assert await leases.holder("run") == again

    await leases.release(again)
    assert await leases.holder("run") is None
    second = await leases.acquire("run", owner="b", ttl=10)
    assert second is not None and second.token > first.token
    with pytest.raises(ValueError, match="ttl"):
        await leases.acquire("other", owner="a", ttl=0)


async def test_a_lease_taken_over_cannot_be_renewed_or_released(
    coordination: Coordination, clock: FakeClock
) -> None:
    leases = CoordinationLeaseStore(coordination)
    old = await leases.acquire("run", owner="a", ttl=10)
    assert old is not None
    clock.advance(11)
    new = await leases.acquire("run", owner="b", ttl=10)
    assert new is not None and new.token > old.token
    with pytest.raises(StaleToken) as caught:
        await leases.renew(old, ttl=10)
    assert (caught.value.name, caught.value.token, caught.value.current) == ("run", old.token, new.token)
    await leases.release(old)  # a no-op: it is not ours any more
    assert await leases.holder("run") == new
    await leases.release(new)
    with pytest.raises(StaleToken) as caught:
        await leases.renew(new, ttl=10)  # released
    assert caught.value.current == -1


async def test_long_and_odd_names_are_hashed_apart(coordination: Coordination) -> None:
    leases = CoordinationLeaseStore(coordination)
    names = ["x" * 300, "x" * 301, "a\x00b", "#a", "a"]
    for name in names:
        assert await leases.acquire(name, owner="o", ttl=10) is not None
    for name in names:
        held = await leases.holder(name)
        assert held is not None and held.name == name


# ---------------------------------------------------------------------- the run-state store


async def test_records_fences_and_cache(coordination: Coordination, clock: FakeClock) -> None:
    state = CoordinationRunStateStore(coordination, cache_ttl=60)
    assert await state.begin("run", 1) == {}
    await state.commit("run", "a", OK, 1)
    await state.commit("run", "b", NodeRecord(status="failed", attempts=3, error="ValueError()"), 1)
    await state.commit("run", "b", NodeRecord(status="succeeded", output=None, attempts=1), 1)  # replaces
    await state.commit("run-2", "a", NodeRecord(status="succeeded", output="other run"), None)
    expected = {"a": OK, "b": NodeRecord(status="succeeded", output=None, attempts=1)}
    assert await state.load("run") == expected and await state.begin("run", 1) == expected
    assert await state.load("unknown") == {}

    await state.begin("run", 3)
    with pytest.raises(StaleToken) as caught:
        await state.commit("run", "a", OK, 2)
    assert (caught.value.name, caught.value.token, caught.value.current) == ("run", 2, 3)
    with pytest.raises(StaleToken):
        await state.begin("run", 1)
    await state.commit("run", "a", OK, 4)  # a newer token raises the fence
    with pytest.raises(StaleToken):
        await state.commit("run", "c", OK, 3)
    await state.commit("run", "c", OK, None)  # unfenced writes are not checked
    assert set(await state.load("run")) == {"a", "b", "c"}
    await state.delete("run")
    assert await state.begin("run", 1) == {}  # records and fence are gone
    assert await state.load("run-2") != {}

    assert await state.load_cached("k") is None
    await state.store_cached("k", OK)
    assert await state.load_cached("k") == OK
    clock.advance(60)
    assert await state.load_cached("k") is None  # cache_ttl


async def test_outputs_are_msgpack(coordination: Coordination) -> None:
    state = CoordinationRunStateStore(coordination)

    class Row(msgspec.Struct):
        id: int

    await state.commit("r", "a", NodeRecord(status="succeeded", output=[Row(1), Row(2)]), None)
    assert (await state.load("r"))["a"].output == [{"id": 1}, {"id": 2}]
    with pytest.raises(OutputNotSerialisable, match="node 'b' of run 'r'"):
        await state.commit("r", "b", NodeRecord(status="succeeded", output=object()), None)
    with pytest.raises(OutputNotSerialisable, match="cache key 'k'"):
        await state.store_cached("k", NodeRecord(status="succeeded", output=iter([1])))
    assert set(await state.load("r")) == {"a"} and await state.load_cached("k") is None


class Meddler(LocalCoordination):
    """Lets another writer in between a reader's `get` and its `compare_and_set`, a few times."""

    def __init__(self, times: int) -> None:
        super().__init__()
        self.times = times
        self.meddle: Any = None

    async def compare_and_set(
        self, key: str, expected: bytes | None, value: bytes | None, *, ttl: float | None = None
    ) -> bool:
        if self.times and self.meddle is not None:
            self.times -= 1
            await self.meddle()
        return await super().compare_and_set(key, expected, value, ttl=ttl)


async def test_commits_that_collide_are_retried_not_lost() -> None:
    shared = Meddler(times=3)
    state = CoordinationRunStateStore(shared)
    other = CoordinationRunStateStore(LocalCoordination())
    rival_commits = iter(range(3))

    async def rival() -> None:  # another worker commits its node meanwhile (through the raw store)
        node = f"rival-{next(rival_commits)}"
        raw = await shared.get("dag/run/r")
        await other.commit("r", node, OK, None)  # build the rival's blob elsewhere, then write it in
        blob = await other._coordination.get("dag/run/r")
        assert blob is not None
        await LocalCoordination.compare_and_set(shared, "dag/run/r", raw, blob)

    shared.meddle = rival
    await state.commit("r", "mine", OK, 1)
    assert shared.times == 0
    records = await state.load("r")
    assert "mine" in records and "rival-2" in records  # the last rival's write survived, and mine


async def test_a_rival_raising_the_fence_meanwhile_makes_the_commit_stale() -> None:
    shared = Meddler(times=1)
    state = CoordinationRunStateStore(shared)

    async def takeover() -> None:
        shared.meddle = None
        await state.begin("r", 9)

    await state.begin("r", 1)
    shared.meddle = takeover  # between reading the fence (1) and writing, a new holder raises it to 9
    with pytest.raises(StaleToken) as caught:
        await state.commit("r", "a", OK, 1)
    assert caught.value.current == 9
    assert await state.load("r") == {}


# ---------------------------------------------------------------------- a scheduler on top


def _scheduler(coordination: Coordination, guard_clock: ManualClock, ttl: float = 30) -> Scheduler:
    guard = RunGuard(CoordinationLeaseStore(coordination), ttl=ttl, clock=guard_clock)
    return Scheduler(store=CoordinationRunStateStore(coordination), guard=guard)


async def test_a_duplicate_run_is_blocked(coordination: Coordination) -> None:
    gate, entered, calls = anyio.Event(), anyio.Event(), []

    async def wait(inputs: Inputs) -> str:
        calls.append(inputs.run_id)
        entered.set()
        await gate.wait()
        return "done"

    graph = Graph({"wait": wait})
    here, elsewhere = _scheduler(coordination, ManualClock()), _scheduler(coordination, ManualClock())
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: here.run(graph, run_id="nightly"))
        await entered.wait()
        with pytest.raises(RunAlreadyActive) as caught:
            await elsewhere.run(graph, run_id="nightly")
        assert caught.value.run_id == "nightly" and caught.value.holder is not None
        gate.set()
    again = await elsewhere.run(graph, run_id="nightly")  # released at the end; resumes: nothing to do
    assert again.statuses == {"wait": NodeStatus.RESTORED} and calls == ["nightly"]


async def test_the_guard_renews_through_the_coordination(
    coordination: Coordination, clock: FakeClock, request: pytest.FixtureRequest
) -> None:
    if "cluster-raft" in request.node.callspec.id:
        pytest.skip("a Raft commit completes on pysyncobj's thread: wait_all_tasks_blocked cannot pace it")
    gate, entered = anyio.Event(), anyio.Event()

    async def wait(inputs: Inputs) -> None:
        entered.set()
        await gate.wait()

    leases = CoordinationLeaseStore(coordination)
    scheduler = _scheduler(coordination, clock)  # the guard paces renewals on the same clock
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: scheduler.run(Graph({"wait": wait}), run_id="long"))
        await entered.wait()
        first = await leases.holder("long")
        assert first is not None
        for _ in range(4):  # 40 s in 10 s steps: past the ttl, renewed each time
            clock.advance(10)
            await anyio.wait_all_tasks_blocked()  # the guard's renewal task woke, renewed, sleeps again
            held = await leases.holder("long")
            assert held is not None and (held.token, held.expires) == (first.token, clock.now() + 30)
        assert await leases.acquire("long", owner="intruder", ttl=30) is None
        gate.set()
    assert await leases.holder("long") is None


async def test_a_stale_holder_cannot_commit(coordination: Coordination, clock: FakeClock) -> None:
    gate, entered = anyio.Event(), anyio.Event()

    async def paused(inputs: Inputs) -> str:
        entered.set()
        await gate.wait()
        return "stale result"

    async def fresh(inputs: Inputs) -> str:
        return "fresh result"

    stalled = _scheduler(coordination, ManualClock())  # its renewals never fire: as if paused
    takeover = _scheduler(coordination, ManualClock())
    outcome: list[BaseException] = []

    async def run_stalled() -> None:
        try:
            await stalled.run(Graph({"node": paused}), run_id="job")
        except StaleToken as exc:
            outcome.append(exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run_stalled)
        await entered.wait()
        clock.advance(31)  # the stalled holder's lease expires
        result = await takeover.run(Graph({"node": fresh}), run_id="job")
        assert result.outputs == {"node": "fresh result"}
        gate.set()  # the stalled holder wakes and commits with its old token
    [error] = outcome
    assert error.name == "job" and error.token < error.current  # type: ignore[attr-defined]
    state = CoordinationRunStateStore(coordination)
    assert (await state.load("job"))["node"].output == "fresh result"


@pytest.mark.parametrize("kind", ["local", "lmdb"])
async def test_a_failed_run_resumes(kind: str, open_coordination: Callable[[str], Coordination]) -> None:
    extracted: list[int] = []
    broken = True

    async def extract(inputs: Inputs) -> list[int]:
        extracted.append(1)
        return [1, 2, 3]

    async def load(inputs: Inputs) -> int:
        if broken:
            raise ConnectionError("warehouse is down")
        return sum(inputs.value)

    graph = Graph.chain(("extract", extract), ("load", load))
    coordination = open_coordination(kind)
    async with coordination:
        with pytest.raises(RunFailed):
            await _scheduler(coordination, ManualClock()).run(graph, run_id="nightly")
    broken = False
    if kind == "lmdb":  # a restart in between: the state is on disk
        coordination = open_coordination(kind)
    async with coordination:
        result = await _scheduler(coordination, ManualClock()).run(graph, run_id="nightly")
    assert result.statuses == {"extract": NodeStatus.RESTORED, "load": NodeStatus.SUCCEEDED}
    assert result.outputs["load"] == 6 and extracted == [1]
