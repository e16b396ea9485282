"""Idempotency keys: cached outputs are reused, and concurrent identical keys execute once."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

import anyio
import msgspec
import pytest

from mocra_dag import (
    EventLog,
    Graph,
    Inputs,
    MemoryRunStateStore,
    NodePolicy,
    NodeStatus,
    RunFailed,
    RunGuard,
    Scheduler,
    Step,
)

if TYPE_CHECKING:
    from conftest import Stores
    from mocra_dag import NodeRecord, RunStateStore

pytestmark = pytest.mark.anyio

S = NodeStatus


class MissCounter:
    """Wraps a store and counts cache lookups that found nothing (each node checks before waiting)."""

    def __init__(self, inner: RunStateStore) -> None:
        self.inner = inner
        self.misses = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def load_cached(self, key: str) -> NodeRecord | None:
        found = await self.inner.load_cached(key)
        self.misses += found is None
        return found


class Summary(msgspec.Struct):
    day: str
    rows: int


def summarise_step(calls: Counter[str], gate: anyio.Event | None = None) -> Step:
    async def summarise(inputs: Inputs) -> Summary:
        calls[inputs.input] += 1
        if gate is not None:
            await gate.wait()
        return Summary(day=inputs.input, rows=len(inputs.input))

    return Step(summarise, key=lambda inputs: f"summary:{inputs.input}", output_type=Summary)


async def test_cached_output_is_reused_across_runs(stores: Stores) -> None:
    calls: Counter[str] = Counter()
    seen: list[Any] = []

    async def report(inputs: Inputs) -> str:
        seen.append(inputs.value)
        return f"{inputs.value.day}: {inputs.value.rows}"

    graph = (
        Graph.builder().node("summary", summarise_step(calls)).node("report", report, after="summary").build()
    )
    log = EventLog()
    scheduler = Scheduler(store=stores.state(), events=log)

    first = await scheduler.run(graph, run_id="a", input="2024-05-01")
    second = await scheduler.run(graph, run_id="b", input="2024-05-01")
    other = await scheduler.run(graph, run_id="c", input="2024-05-02")

    assert calls == {"2024-05-01": 1, "2024-05-02": 1}
    assert first.statuses["summary"] is S.SUCCEEDED
    assert second.statuses["summary"] is S.CACHED and other.statuses["summary"] is S.SUCCEEDED
    assert second.outputs["report"] == "2024-05-01: 10"
    assert isinstance(seen[1], Summary)  # converted back from msgpack by a durable store
    assert log.statuses("summary", "b") == [S.PENDING, S.CACHED]


async def test_cache_survives_a_restart(stores: Stores) -> None:
    calls: Counter[str] = Counter()
    graph = Graph({"summary": summarise_step(calls)})
    state = stores.state()
    await Scheduler(store=state).run(graph, run_id="a", input="day")
    if stores.durable:
        await state.aclose()
        state = stores.state()
    again = await Scheduler(store=state).run(graph, run_id="b", input="day")
    assert calls == {"day": 1}
    assert again.outputs["summary"] == Summary(day="day", rows=3)


async def test_a_key_of_none_always_runs() -> None:
    calls = 0

    async def fn(inputs: Inputs) -> int:
        nonlocal calls
        calls += 1
        return calls

    graph = Graph({"x": Step(fn, key=lambda inputs: None)})
    scheduler = Scheduler()
    assert [(await scheduler.run(graph)).outputs["x"] for _ in range(3)] == [1, 2, 3]


async def test_concurrent_identical_keys_execute_once(stores: Stores, until: Any) -> None:
    calls: Counter[str] = Counter()
    gate = anyio.Event()
    graph = Graph({"summary": summarise_step(calls, gate)})
    store = MissCounter(stores.state())
    scheduler = Scheduler(store=store)  # type: ignore[arg-type]
    results: dict[int, Any] = {}

    async def run(n: int) -> None:
        results[n] = await scheduler.run(graph, run_id=f"run-{n}", input="2024-05-01")

    async with anyio.create_task_group() as tg:
        for n in range(5):
            tg.start_soon(run, n)
        # Every run looked the key up (the leader twice) and four wait for the leader's result.
        await until(lambda: store.misses == 6 and sum(calls.values()) == 1)
        gate.set()
    assert calls == {"2024-05-01": 1}
    statuses = Counter(result.statuses["summary"] for result in results.values())
    assert statuses == {S.SUCCEEDED: 1, S.CACHED: 4}
    assert {result.outputs["summary"].rows for result in results.values()} == {10}


async def test_single_flight_spans_schedulers_sharing_nothing_but_the_store(stores: Stores) -> None:
    # Single-flight is per scheduler; a second scheduler on the same store reuses the cache afterwards.
    calls: Counter[str] = Counter()
    graph = Graph({"summary": summarise_step(calls)})
    state = stores.state()
    await Scheduler(store=state).run(graph, run_id="a", input="x")
    result = await Scheduler(store=state, guard=RunGuard(stores.leases())).run(graph, run_id="b", input="x")
    assert calls == {"x": 1} and result.statuses["summary"] is S.CACHED


async def test_when_the_leader_fails_a_waiting_run_computes_itself(until: Any) -> None:
    gate = anyio.Event()
    calls = 0

    async def fails_first(inputs: Inputs) -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            await gate.wait()
            raise ConnectionError("first call fails")
        return "second call works"

    graph = Graph({"x": Step(fails_first, key=lambda inputs: "same", policy=NodePolicy())})
    store = MissCounter(MemoryRunStateStore())
    scheduler = Scheduler(store=store)  # type: ignore[arg-type]
    outcomes: dict[str, Any] = {}

    async def run(run_id: str) -> None:
        try:
            outcomes[run_id] = (await scheduler.run(graph, run_id=run_id)).statuses["x"]
        except RunFailed as exc:
            outcomes[run_id] = exc.errors["x"]

    async with anyio.create_task_group() as tg:
        tg.start_soon(run, "leader")
        await until(lambda: calls == 1)
        tg.start_soon(run, "follower")
        await until(lambda: store.misses == 3)  # leader: 2 lookups, follower: 1, now waiting
        gate.set()
    assert isinstance(outcomes["leader"], ConnectionError)
    assert outcomes["follower"] is S.SUCCEEDED
    assert calls == 2
