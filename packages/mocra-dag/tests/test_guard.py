"""The run guard: one holder per run id, background renewal, and fencing of a holder that lost its lease."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
import pytest

from mocra_dag import (
    EventLog,
    Graph,
    Inputs,
    ManualClock,
    NodeStatus,
    RunAlreadyActive,
    RunGuard,
    Scheduler,
    StaleToken,
)

if TYPE_CHECKING:
    from conftest import Stores

pytestmark = pytest.mark.anyio


def gated_graph(gate: anyio.Event, calls: list[str], entered: anyio.Event | None = None) -> Graph[Any]:
    async def wait(inputs: Inputs) -> str:
        calls.append(inputs.run_id)
        if entered is not None:
            entered.set()
        await gate.wait()
        return "done"

    return Graph({"wait": wait})


async def test_a_second_run_with_the_same_id_is_refused(stores: Stores) -> None:
    gate, entered, calls = anyio.Event(), anyio.Event(), []
    graph = gated_graph(gate, calls, entered)
    state, leases = stores.state(), stores.leases()
    here = Scheduler(store=state, guard=RunGuard(leases, clock=stores.clock))
    elsewhere = Scheduler(store=state, guard=RunGuard(leases, clock=stores.clock))  # another "process"

    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: here.run(graph, run_id="nightly"))
        await entered.wait()
        for scheduler in (here, elsewhere):
            with pytest.raises(RunAlreadyActive) as caught:
                await scheduler.run(graph, run_id="nightly")
            assert caught.value.run_id == "nightly"
        other_id = await elsewhere.run(
            Graph({"x": lambda inputs: anyio.lowlevel.checkpoint()}), run_id="other"
        )
        assert other_id.statuses == {"x": NodeStatus.SUCCEEDED}
        gate.set()
    assert calls == ["nightly"]
    # Released at the end: the same id may run again (and resumes: nothing left to do).
    again = await elsewhere.run(graph, run_id="nightly")
    assert again.statuses == {"wait": NodeStatus.RESTORED} and calls == ["nightly"]


async def test_the_lease_is_renewed_while_the_run_is_going(stores: Stores, until: Any) -> None:
    gate, entered, calls = anyio.Event(), anyio.Event(), []
    leases = stores.leases()
    clock = stores.clock
    scheduler = Scheduler(guard=RunGuard(leases, ttl=30, clock=clock), clock=clock)

    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: scheduler.run(gated_graph(gate, calls, entered), run_id="long"))
        await entered.wait()
        first = await leases.holder("long")
        assert first is not None and first.expires == clock.now() + 30

        async def renewed() -> bool:
            held = await leases.holder("long")
            return held is not None and held.expires == clock.now() + 30

        for _ in range(4):  # 40 s in 10 s steps: past the ttl, but renewed each time
            clock.advance(10)
            await until(renewed)
        held = await leases.holder("long")
        assert held is not None and held.token == first.token and held.expires == clock.now() + 30
        assert await leases.acquire("long", owner="intruder", ttl=30) is None
        gate.set()
    assert await leases.holder("long") is None  # released


async def test_a_holder_that_lost_its_lease_cannot_commit(stores: Stores) -> None:
    """A paused process (its renewals stalled) comes back after another took the run over."""
    gate, entered = anyio.Event(), anyio.Event()
    shared = stores.clock  # judges lease expiry
    state, leases = stores.state(), stores.leases()

    async def paused(inputs: Inputs) -> str:
        entered.set()
        await gate.wait()
        return "stale result"

    async def fresh(inputs: Inputs) -> str:
        return "fresh result"

    stalled = Scheduler(store=state, guard=RunGuard(leases, ttl=30, clock=ManualClock()))
    takeover = Scheduler(store=state, guard=RunGuard(leases, ttl=30, clock=shared))
    outcome: list[BaseException] = []

    async def run_stalled() -> None:
        try:
            await stalled.run(Graph({"node": paused}), run_id="job")
        except StaleToken as exc:
            outcome.append(exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run_stalled)
        await entered.wait()
        shared.advance(31)  # the stalled holder's lease expires
        result = await takeover.run(Graph({"node": fresh}), run_id="job")
        assert result.outputs == {"node": "fresh result"}
        gate.set()  # the stalled holder wakes and tries to commit with its old token
    [error] = outcome
    assert (error.name, error.token, error.current) == ("job", 1, 2)
    assert (await state.load("job"))["node"].output == "fresh result"


async def test_a_lost_lease_cancels_the_run(stores: Stores) -> None:
    clock = stores.clock
    leases = stores.leases()
    log = EventLog()
    scheduler = Scheduler(guard=RunGuard(leases, ttl=30, clock=clock), clock=clock, events=log)
    cancelled, entered = anyio.Event(), anyio.Event()

    async def forever(inputs: Inputs) -> None:
        entered.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()

    failure: list[BaseException] = []

    async def run() -> None:
        try:
            await scheduler.run(Graph({"forever": forever}), run_id="job")
        except StaleToken as exc:
            failure.append(exc)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await entered.wait()
            mine = await leases.holder("job")
            assert mine is not None
            clock.advance(31)  # renewal pending at +10 fires now, but first someone else takes over
            intruder = await leases.acquire("job", owner="intruder", ttl=30)
            assert intruder is not None and intruder.token > mine.token
            await cancelled.wait()
    assert isinstance(failure[0], StaleToken)
    assert log.statuses("forever")[-1] is NodeStatus.CANCELLED
    assert (await leases.holder("job")) == intruder  # our release did not free the intruder's lease
