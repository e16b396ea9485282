"""Node policies: retries with jittered backoff, retryable-only errors, per-attempt timeouts, breakers."""

from __future__ import annotations

from collections import Counter

import anyio
import pytest

from mocra_dag import (
    CircuitOpen,
    EventLog,
    Graph,
    Inputs,
    ManualClock,
    MemoryLeaseStore,
    NodePolicy,
    NodeStatus,
    NodeTimeout,
    RunFailed,
    RunGuard,
    Scheduler,
    SchedulerSettings,
    Step,
)

S = NodeStatus


class RecordingClock:
    """Sleeps return at once; the requested durations are kept."""

    def __init__(self) -> None:
        self.sleeps: list[float] = []

    def now(self) -> float:
        return 0.0

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        await anyio.lowlevel.checkpoint()


def scheduler_on(clock: RecordingClock, **settings: object) -> Scheduler:
    # The guard renews on its own (never moving) clock, so only backoff sleeps reach `clock`.
    guard = RunGuard(MemoryLeaseStore(), clock=ManualClock())
    return Scheduler(
        clock=clock,
        guard=guard,
        random=lambda: 0.5,
        settings=SchedulerSettings(**settings),
        events=EventLog(),
    )


def flaky(failures: int, error: type[Exception] = ConnectionError) -> tuple[Counter[str], Step]:
    calls: Counter[str] = Counter()

    async def fn(inputs: Inputs) -> str:
        calls[inputs.node] += 1
        assert inputs.attempt == calls[inputs.node]
        if calls[inputs.node] <= failures:
            raise error(f"attempt {inputs.attempt}")
        return f"ok after {inputs.attempt}"

    return calls, Step(fn)


def test_backoff_grows_caps_and_jitters() -> None:
    policy = NodePolicy(backoff=1.0, max_backoff=5.0, jitter=0.5)
    assert [policy.backoff_delay(n, lambda: 1.0) for n in range(1, 6)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    assert [policy.backoff_delay(n, lambda: 0.0) for n in range(1, 4)] == [0.5, 1.0, 2.0]
    full = NodePolicy(backoff=2.0, jitter=1.0)
    assert full.backoff_delay(1, lambda: 0.25) == 0.5
    assert NodePolicy(backoff=1.0, max_backoff=10.0).backoff_delay(10_000, lambda: 1.0) == 10.0


def test_retryable_errors_by_type_or_predicate() -> None:
    by_type = NodePolicy(retry_on=(ConnectionError, TimeoutError))
    assert by_type.is_retryable(ConnectionResetError()) and by_type.is_retryable(NodeTimeout("n", 1, 1))
    assert not by_type.is_retryable(ValueError())
    by_predicate = NodePolicy(retry_on=lambda exc: "transient" in str(exc))
    assert by_predicate.is_retryable(RuntimeError("transient glitch"))
    assert not by_predicate.is_retryable(RuntimeError("bad input"))
    assert not NodePolicy().is_retryable(CircuitOpen("n", 0.0))  # never, whatever retry_on says


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_retries", -1),
        ("backoff", -0.1),
        ("jitter", 1.5),
        ("timeout", 0),
        ("breaker_threshold", -1),
        ("breaker_cooldown", 0),
        ("retry_on", (ValueError, "x")),
    ],
)
def test_policy_rejects_bad_values(field: str, value: object) -> None:
    with pytest.raises((ValueError, TypeError), match=field):
        NodePolicy(**{field: value})  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_retries_then_success_with_jittered_backoff_on_the_clock() -> None:
    calls, step = flaky(2)
    step = Step(step.fn, policy=NodePolicy(max_retries=3, backoff=0.2, jitter=0.5))
    clock = RecordingClock()
    scheduler = scheduler_on(clock)
    result = await scheduler.run(Graph({"load": step}), run_id="r")
    assert result.outputs == {"load": "ok after 3"}
    assert calls["load"] == 3
    assert clock.sleeps == pytest.approx(
        [0.15, 0.3]
    )  # 0.2 and 0.4, each scaled by 1 - 0.5 * (1 - random() = 0.5)
    assert (await scheduler.store.load("r"))["load"].attempts == 3


@pytest.mark.anyio
async def test_retries_exhausted_fail_with_the_last_error() -> None:
    calls, step = flaky(10)
    scheduler = scheduler_on(RecordingClock(), policy=NodePolicy(max_retries=2, backoff=0))
    with pytest.raises(RunFailed) as caught:
        await scheduler.run(Graph({"load": step}), run_id="r")
    assert calls["load"] == 3
    assert str(caught.value.errors["load"]) == "attempt 3"
    assert (await scheduler.store.load("r"))["load"].status == "failed"


@pytest.mark.anyio
async def test_non_retryable_errors_are_not_retried() -> None:
    calls, step = flaky(1, error=ValueError)
    policy = NodePolicy(max_retries=5, backoff=0, retry_on=(ConnectionError,))
    scheduler = scheduler_on(RecordingClock(), policy=policy)
    with pytest.raises(RunFailed) as caught:
        await scheduler.run(Graph({"parse": step}), run_id="r")
    assert calls["parse"] == 1
    assert isinstance(caught.value.errors["parse"], ValueError)

    calls, step = flaky(1, error=ConnectionError)  # the same policy retries what it names
    assert (await scheduler_on(RecordingClock(), policy=policy).run(Graph({"parse": step}))).outputs


@pytest.mark.anyio
async def test_each_attempt_has_its_own_timeout() -> None:
    attempts: list[int] = []

    async def hangs_once(inputs: Inputs) -> str:
        attempts.append(inputs.attempt)
        if inputs.attempt == 1:
            await anyio.sleep(10)
        return "fine"

    policy = NodePolicy(timeout=0.05, max_retries=1, backoff=0)
    scheduler = scheduler_on(RecordingClock())
    with anyio.fail_after(5):
        result = await scheduler.run(Graph({"slow": Step(hangs_once, policy=policy)}), run_id="r")
    assert result.outputs == {"slow": "fine"} and attempts == [1, 2]

    no_retry = Step(hangs_once, policy=NodePolicy(timeout=0.05))
    attempts.clear()
    with anyio.fail_after(5), pytest.raises(RunFailed) as caught:
        await scheduler.run(Graph({"slow": no_retry}), run_id="r2")
    error = caught.value.errors["slow"]
    assert isinstance(error, NodeTimeout) and isinstance(error, TimeoutError)
    assert (error.node, error.timeout, error.attempt) == ("slow", 0.05, 1)


@pytest.mark.anyio
async def test_circuit_breaker_opens_fails_fast_and_closes_after_cool_down() -> None:
    clock = ManualClock(0.0)
    healthy = False
    calls = 0

    async def upstream_api(inputs: Inputs) -> str:
        nonlocal calls
        calls += 1
        if not healthy:
            raise ConnectionError("down")
        return "up"

    policy = NodePolicy(breaker_threshold=2, breaker_cooldown=60)
    graph = Graph({"fetch": Step(upstream_api, policy=policy)})
    log = EventLog()
    scheduler = Scheduler(clock=clock, events=log)

    for n in range(2):  # two consecutive failures, in two runs
        with pytest.raises(RunFailed) as caught:
            await scheduler.run(graph, run_id=f"run-{n}")
        assert isinstance(caught.value.errors["fetch"], ConnectionError)
    assert calls == 2 and scheduler.is_circuit_open("fetch")

    with pytest.raises(RunFailed) as caught:  # open: fails fast, the node is not called
        await scheduler.run(graph, run_id="run-2")
    error = caught.value.errors["fetch"]
    assert isinstance(error, CircuitOpen) and error.retry_at == 60.0
    assert calls == 2
    assert log.statuses("fetch", "run-2") == [S.PENDING, S.FAILED]

    clock.advance(59)
    with pytest.raises(RunFailed):
        await scheduler.run(graph, run_id="run-3")
    assert calls == 2

    clock.advance(1)  # cool-down over: one trial runs, and fails: open again for a full window
    with pytest.raises(RunFailed) as caught:
        await scheduler.run(graph, run_id="run-4")
    assert isinstance(caught.value.errors["fetch"], ConnectionError) and calls == 3
    with pytest.raises(RunFailed) as caught:
        await scheduler.run(graph, run_id="run-5")
    assert isinstance(caught.value.errors["fetch"], CircuitOpen) and calls == 3

    clock.advance(60)
    healthy = True
    assert (await scheduler.run(graph, run_id="run-6")).outputs == {"fetch": "up"}
    assert not scheduler.is_circuit_open("fetch") and calls == 4


@pytest.mark.anyio
async def test_an_open_breaker_stops_retries() -> None:
    calls, step = flaky(100)
    policy = NodePolicy(max_retries=10, backoff=0, breaker_threshold=3, breaker_cooldown=30)
    scheduler = scheduler_on(RecordingClock(), policy=policy)
    with pytest.raises(RunFailed) as caught:
        await scheduler.run(Graph({"api": step}), run_id="r")
    assert calls["api"] == 3
    assert isinstance(caught.value.errors["api"], CircuitOpen)
