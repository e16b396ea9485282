"""Resume: running a run id again after a failure re-runs only the nodes that did not succeed."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

import pytest

from mocra_dag import (
    EventLog,
    Graph,
    Inputs,
    MemoryRunStateStore,
    NodeStatus,
    OutputNotSerialisable,
    RunFailed,
    RunGuard,
    Scheduler,
    SchedulerSettings,
)

if TYPE_CHECKING:
    from conftest import Stores

pytestmark = pytest.mark.anyio

S = NodeStatus


def etl(calls: Counter[str], broken: set[str]) -> Graph[Any]:
    def node(name: str) -> Any:
        async def fn(inputs: Inputs) -> Any:
            calls[name] += 1
            if name in broken:
                raise ConnectionError(f"{name} is down")
            return {"node": name, "from": sorted(inputs.upstream)}

        return fn

    #  users ─┐
    #         ├─▶ join ─▶ load
    #  orders ┘
    #  audit (independent)
    return (
        Graph.builder()
        .node("users", node("users"))
        .node("orders", node("orders"))
        .node("join", node("join"), after=["users", "orders"])
        .node("load", node("load"), after="join")
        .node("audit", node("audit"))
        .build()
    )


async def test_resume_runs_only_what_did_not_succeed(stores: Stores) -> None:
    calls: Counter[str] = Counter()
    broken = {"join"}
    settings = SchedulerSettings(on_failure="continue")

    def scheduler(log: EventLog | None = None) -> Scheduler:
        return Scheduler(store=stores.state(), guard=RunGuard(stores.leases()), settings=settings, events=log)

    with pytest.raises(RunFailed) as caught:
        await scheduler().run(etl(calls, broken), run_id="day-1")
    assert calls == {"users": 1, "orders": 1, "join": 1, "audit": 1}
    assert caught.value.result.statuses["load"] is S.SKIPPED

    await stores.close()  # a restart (memory stores keep their content: same process)
    broken.clear()
    log = EventLog()
    result = await scheduler(log).run(etl(calls, broken), run_id="day-1")
    assert calls == {"users": 1, "orders": 1, "join": 2, "load": 1, "audit": 1}
    assert result.statuses == {
        "users": S.RESTORED,
        "orders": S.RESTORED,
        "join": S.SUCCEEDED,
        "load": S.SUCCEEDED,
        "audit": S.RESTORED,
    }
    assert result.outputs["join"] == {"node": "join", "from": ["orders", "users"]}
    assert result.outputs["load"] == {"node": "load", "from": ["join"]}
    assert log.statuses("users") == [S.RESTORED]
    assert log.statuses("join") == [S.PENDING, S.RUNNING, S.SUCCEEDED]

    again = await scheduler().run(etl(calls, broken), run_id="day-1")  # finished: nothing runs
    assert set(again.statuses.values()) == {S.RESTORED}
    assert sum(calls.values()) == 6
    assert again.outputs == result.outputs


async def test_a_different_run_id_starts_afresh(stores: Stores) -> None:
    calls: Counter[str] = Counter()
    scheduler = Scheduler(store=stores.state(), guard=RunGuard(stores.leases()))
    await scheduler.run(etl(calls, set()), run_id="day-1")
    await scheduler.run(etl(calls, set()), run_id="day-2")
    assert set(calls.values()) == {2}


async def test_resume_after_a_cancelled_run(stores: Stores) -> None:
    calls: Counter[str] = Counter()
    scheduler = Scheduler(store=stores.state(), guard=RunGuard(stores.leases()))
    with pytest.raises(RunFailed):
        await scheduler.run(etl(calls, {"orders"}), run_id="r")  # on_failure="cancel"
    records = await scheduler.store.load("r")
    assert records["orders"].status == "failed" and "orders is down" in (records["orders"].error or "")
    before = dict(calls)
    result = await scheduler.run(etl(calls, set()), run_id="r")
    assert all(calls[node] == before.get(node, 0) + (result.statuses[node] is S.SUCCEEDED) for node in calls)
    assert calls["orders"] == 2 and calls["join"] == 1 and calls["load"] == 1


async def test_outputs_that_the_store_cannot_encode_fail_the_node(stores: Stores) -> None:
    async def opaque(inputs: Inputs) -> object:
        return object()

    scheduler = Scheduler(store=stores.state())
    with pytest.raises(RunFailed) as caught:
        await scheduler.run(Graph({"x": opaque}), run_id="r")
    error = caught.value.errors["x"]
    assert isinstance(error, OutputNotSerialisable)
    assert "node 'x' of run 'r'" in str(error)


async def test_unserialised_memory_state_passes_any_object() -> None:
    thing = object()

    async def opaque(inputs: Inputs) -> object:
        return thing

    async def same(inputs: Inputs) -> bool:
        return inputs.value is thing

    scheduler = Scheduler(store=MemoryRunStateStore(serialise=False))
    graph = Graph.chain(("opaque", opaque), ("same", same))
    assert (await scheduler.run(graph, run_id="r")).outputs == {"opaque": thing, "same": True}
    assert (await scheduler.run(graph, run_id="r")).outputs["opaque"] is thing  # restored as is
