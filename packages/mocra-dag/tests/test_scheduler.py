"""Scheduler semantics: inputs, fan-in, concurrency, failure modes, timeouts, events."""

from __future__ import annotations

import logging
import re
from collections import Counter
from typing import Any

import anyio
import pytest

from mocra_dag import (
    EventLog,
    EventLogger,
    Graph,
    Inputs,
    ManualClock,
    NodeEvent,
    NodePolicy,
    NodeStatus,
    RunFailed,
    RunTimeout,
    Scheduler,
    SchedulerSettings,
    Step,
)

pytestmark = pytest.mark.anyio

S = NodeStatus


async def test_nodes_receive_run_input_and_upstream_outputs() -> None:
    seen: dict[str, Inputs] = {}

    async def record(inputs: Inputs) -> str:
        seen[inputs.node] = inputs
        return f"{inputs.node}({','.join(f'{k}={v}' for k, v in inputs.upstream.items())})"

    graph = Graph.builder().node("a", record).node("b", record).node("c", record, after=["a", "b"]).build()
    result = await Scheduler().run(graph, run_id="r1", input={"day": "2024-05-01"})

    assert result.outputs["c"] == "c(a=a(),b=b())"
    assert seen["c"].upstream == {"a": "a()", "b": "b()"}
    assert seen["a"].input == {"day": "2024-05-01"} and seen["a"].upstream == {}
    assert (seen["c"].run_id, seen["c"].attempt) == ("r1", 1)
    assert result.statuses == {"a": S.SUCCEEDED, "b": S.SUCCEEDED, "c": S.SUCCEEDED}


async def test_fan_in_waits_for_every_upstream() -> None:
    slow_may_finish = anyio.Event()
    started: list[str] = []

    async def fast(inputs: Inputs) -> int:
        started.append(inputs.node)
        return 1

    async def slow(inputs: Inputs) -> int:
        started.append(inputs.node)
        await slow_may_finish.wait()
        return 2

    async def join(inputs: Inputs) -> int:
        started.append(inputs.node)
        return sum(inputs.upstream.values())

    graph = (
        Graph.builder()
        .node("fast", fast)
        .node("slow", slow)
        .node("join", join, after=["fast", "slow"])
        .build()
    )
    async with anyio.create_task_group() as tg:
        results: list[Any] = []

        async def run() -> None:
            results.append(await Scheduler().run(graph, run_id="fan-in"))

        tg.start_soon(run)
        await anyio.wait_all_tasks_blocked()
        assert sorted(started) == ["fast", "slow"]  # fast is done, join still waits for slow
        slow_may_finish.set()
    assert started[-1] == "join"
    assert results[0].outputs["join"] == 3


async def test_max_in_flight_bounds_concurrency() -> None:
    running = peak = 0

    async def work(inputs: Inputs) -> None:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await anyio.sleep(0.005)
        running -= 1

    graph = Graph({f"n{i}": work for i in range(12)})
    scheduler = Scheduler(settings=SchedulerSettings(max_in_flight=3))
    await scheduler.run(graph, run_id="bounded")
    assert peak == 3

    unbounded = Scheduler(settings=SchedulerSettings(max_in_flight=100))
    peak = 0
    await unbounded.run(graph, run_id="unbounded")
    assert peak == 12  # the limit, not the graph, was the bound above


async def test_five_concurrent_runs_of_one_graph() -> None:
    calls: Counter[str] = Counter()

    async def extract(inputs: Inputs) -> list[int]:
        calls["extract"] += 1
        await anyio.sleep(0.005)
        return list(range(inputs.input))

    async def square(inputs: Inputs) -> list[int]:
        calls["square"] += 1
        await anyio.sleep(0.001)
        return [x * x for x in inputs.value]

    async def total(inputs: Inputs) -> int:
        calls["total"] += 1
        return sum(inputs.value)

    graph = Graph.chain(("extract", extract), ("square", square), ("total", total))
    scheduler = Scheduler()
    results: dict[int, int] = {}

    async def run(n: int) -> None:
        results[n] = (await scheduler.run(graph, run_id=f"run-{n}", input=n)).outputs["total"]

    async with anyio.create_task_group() as tg:
        for n in range(1, 6):
            tg.start_soon(run, n)
    assert results == {n: sum(x * x for x in range(n)) for n in range(1, 6)}
    assert calls == {"extract": 5, "square": 5, "total": 5}


def failing_graph(fail: Any, slow: Any, quick: Any) -> Graph[Any]:
    #   bad ─▶ after_bad ─▶ end        slow ─▶ after_slow
    #                        ▲                  quick
    #   slow ────────────────┘
    return (
        Graph.builder()
        .node("bad", fail)
        .node("after_bad", quick, after="bad")
        .node("slow", slow)
        .node("end", quick, after=["after_bad", "slow"])
        .node("after_slow", quick, after="slow")
        .node("quick", quick)
        .build()
    )


async def test_on_failure_cancel_stops_the_rest() -> None:
    slow_cancelled = False

    async def fail(inputs: Inputs) -> None:
        await anyio.sleep(0.01)
        raise ValueError("bad row")

    async def slow(inputs: Inputs) -> None:
        nonlocal slow_cancelled
        try:
            await anyio.sleep(10)
        except anyio.get_cancelled_exc_class():
            slow_cancelled = True
            raise

    async def quick(inputs: Inputs) -> str:
        return "ok"

    scheduler = Scheduler(settings=SchedulerSettings(on_failure="cancel"))
    with anyio.fail_after(5):
        with pytest.raises(RunFailed) as caught:
            await scheduler.run(failing_graph(fail, slow, quick), run_id="cancel")
    assert slow_cancelled
    assert list(caught.value.errors) == ["bad"]
    assert isinstance(caught.value.errors["bad"], ValueError)
    statuses = caught.value.result.statuses
    assert statuses == {
        "bad": S.FAILED,
        "after_bad": S.CANCELLED,
        "slow": S.CANCELLED,
        "end": S.CANCELLED,
        "after_slow": S.CANCELLED,
        "quick": S.SUCCEEDED,
    }
    assert caught.value.result.outputs == {"quick": "ok"}


async def test_on_failure_continue_skips_only_descendants() -> None:
    async def fail(inputs: Inputs) -> None:
        raise ValueError("bad row")

    async def slow(inputs: Inputs) -> str:
        await anyio.sleep(0.02)
        return "slow"

    async def quick(inputs: Inputs) -> str:
        return "ok"

    log = EventLog()
    scheduler = Scheduler(settings=SchedulerSettings(on_failure="continue"), events=log)
    with pytest.raises(RunFailed) as caught:
        await scheduler.run(failing_graph(fail, slow, quick), run_id="continue")
    assert caught.value.result.statuses == {
        "bad": S.FAILED,
        "after_bad": S.SKIPPED,
        "slow": S.SUCCEEDED,
        "end": S.SKIPPED,
        "after_slow": S.SUCCEEDED,
        "quick": S.SUCCEEDED,
    }
    assert caught.value.result.outputs == {"slow": "slow", "after_slow": "ok", "quick": "ok"}
    assert log.statuses("end") == [S.PENDING, S.SKIPPED]  # skipped as soon as "bad" failed
    assert "'bad': ValueError: bad row" in str(caught.value)


async def test_run_timeout_cancels_running_nodes() -> None:
    async def sleepy(inputs: Inputs) -> None:
        await anyio.sleep(10)

    async def quick(inputs: Inputs) -> int:
        return 1

    graph = (
        Graph.builder()
        .node("quick", quick)
        .node("sleepy", sleepy)
        .node("after", quick, after="sleepy")
        .build()
    )
    scheduler = Scheduler(settings=SchedulerSettings(run_timeout=0.05))
    with anyio.fail_after(5):
        with pytest.raises(RunTimeout) as caught:
            await scheduler.run(graph, run_id="late")
    assert isinstance(caught.value, TimeoutError) and isinstance(caught.value, RunFailed)
    assert caught.value.timeout == 0.05 and caught.value.errors == {}
    assert str(caught.value) == "run 'late' timed out after 0.05 s"
    assert caught.value.result.statuses == {"quick": S.SUCCEEDED, "sleepy": S.CANCELLED, "after": S.CANCELLED}


async def test_events_are_emitted_in_order() -> None:
    clock = ManualClock(50.0)
    log = EventLog()
    failures = iter([ConnectionError("reset")])

    async def first(inputs: Inputs) -> int:
        return 1

    async def flaky(inputs: Inputs) -> int:
        for error in failures:
            raise error
        return inputs.value + 1

    async def broken(inputs: Inputs) -> int:
        raise KeyError("missing")

    graph = (
        Graph.builder()
        .node("first", first)
        .node("flaky", Step(flaky, policy=NodePolicy(max_retries=1, backoff=0)), after="first")
        .node("broken", broken, after="flaky")
        .build()
    )
    scheduler = Scheduler(events=log, clock=clock)
    with pytest.raises(RunFailed):
        await scheduler.run(graph, run_id="ev")
    trail = [(e.node, e.status, e.attempt) for e in log.events]
    assert trail == [
        ("first", S.PENDING, 0),
        ("flaky", S.PENDING, 0),
        ("broken", S.PENDING, 0),
        ("first", S.RUNNING, 1),
        ("first", S.SUCCEEDED, 1),
        ("flaky", S.RUNNING, 1),
        ("flaky", S.RETRYING, 1),
        ("flaky", S.RUNNING, 2),
        ("flaky", S.SUCCEEDED, 2),
        ("broken", S.RUNNING, 1),
        ("broken", S.FAILED, 1),
    ]
    assert all(e.run_id == "ev" and e.at == 50.0 for e in log.events)
    retrying = log.events[6]
    assert isinstance(retrying.error, ConnectionError) and retrying.delay == 0.0
    assert isinstance(log.events[-1].error, KeyError)
    assert [e.status.is_final for e in log.events[-3:]] == [True, False, True]


async def test_a_cancelled_caller_cancels_the_nodes() -> None:
    log = EventLog()

    async def sleepy(inputs: Inputs) -> None:
        await anyio.sleep(10)

    async def quick(inputs: Inputs) -> None:
        return None

    graph = Graph.builder().node("sleepy", sleepy).node("after", quick, after="sleepy").build()
    scheduler = Scheduler(events=log)
    with anyio.move_on_after(0.02):
        await scheduler.run(graph, run_id="caller-gone")
    assert log.statuses("sleepy")[-1] is S.CANCELLED
    assert log.statuses("after") == [S.PENDING, S.CANCELLED]
    # The lease was released: the run can start again.
    with anyio.move_on_after(0.02):
        await scheduler.run(graph, run_id="caller-gone")


async def test_node_payloads_must_be_callables_or_steps() -> None:
    with pytest.raises(TypeError, match="node 'x' must carry an async callable or a Step, got int"):
        await Scheduler().run(Graph({"x": 1}))  # type: ignore[dict-item]


@pytest.mark.parametrize("run_id", ["", "a\x00b"])
async def test_run_ids_are_checked(run_id: str) -> None:
    async def fn(inputs: Inputs) -> None:
        return None

    with pytest.raises(ValueError, match="run_id"):
        await Scheduler().run(Graph({"x": fn}), run_id=run_id)


async def test_a_fresh_run_id_is_forgotten_after_success() -> None:
    async def fn(inputs: Inputs) -> int:
        return 1

    scheduler = Scheduler()
    result = await scheduler.run(Graph({"x": fn}))
    assert re.fullmatch(r"[0-9a-f]{32}", result.run_id)
    assert await scheduler.store.load(result.run_id) == {}
    kept = await scheduler.run(Graph({"x": fn}), run_id="named")
    assert (await scheduler.store.load(kept.run_id))["x"].output == 1


async def test_inputs_value_is_ambiguous_with_several_upstreams() -> None:
    async def one(inputs: Inputs) -> int:
        return 1

    async def ambiguous(inputs: Inputs) -> int:
        return int(inputs.value)

    graph = Graph.builder().node("a", one).node("b", one).node("c", ambiguous, after=["a", "b"]).build()
    with pytest.raises(RunFailed) as caught:
        await Scheduler().run(graph, run_id="amb")
    assert "node 'c' has 2 upstreams ['a', 'b']" in str(caught.value.errors["c"])


async def test_run_failed_chains_the_node_error() -> None:
    async def broken(inputs: Inputs) -> None:
        raise KeyError("missing column")

    with pytest.raises(RunFailed) as caught:
        await Scheduler().run(Graph({"parse": broken}), run_id="r")
    assert isinstance(caught.value.__cause__, KeyError)


async def test_a_failing_event_sink_fails_the_run() -> None:
    class Broken:
        def emit(self, event: NodeEvent) -> None:
            if event.status is S.RUNNING:
                raise RuntimeError("sink is broken")

    async def fn(inputs: Inputs) -> int:
        return 1

    with pytest.raises(RunFailed) as caught:
        await Scheduler(events=Broken()).run(Graph.chain(("a", fn), ("b", fn)), run_id="r")
    assert str(caught.value.errors["a"]) == "sink is broken"


async def test_event_logger_logs_failures_and_retries(caplog: pytest.LogCaptureFixture) -> None:
    failures = iter([ConnectionError("reset")])

    async def flaky(inputs: Inputs) -> int:
        for error in failures:
            raise error
        raise ValueError("bad")

    caplog.set_level(logging.DEBUG, logger="mocra_dag.events")
    scheduler = Scheduler(
        events=EventLogger(), settings=SchedulerSettings(policy=NodePolicy(max_retries=1, backoff=0))
    )
    with pytest.raises(RunFailed):
        await scheduler.run(Graph({"load": flaky}), run_id="r")
    levels = [(record.levelname, record.getMessage()) for record in caplog.records]
    assert ("INFO", "run r node load retrying (attempt 1): ConnectionError('reset')") in levels
    assert ("WARNING", "run r node load failed (attempt 2): ValueError('bad')") in levels
    assert ("DEBUG", "run r node load pending (attempt 0)") in levels
