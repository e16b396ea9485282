"""One run of a graph: starts nodes as their upstreams finish, retries, caches, records, reports."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import anyio
import msgspec

from ._breaker import Breakers
from ._errors import NodeTimeout, RunFailed, RunTimeout, StaleToken
from ._events import NodeEvent, NodeStatus
from ._flight import Flights
from ._groups import raise_single
from ._state import NodeRecord
from ._step import Inputs

if TYPE_CHECKING:
    from collections.abc import Callable

    from anyio.abc import TaskGroup

    from ._clock import Clock
    from ._events import EventSink
    from ._graph import Graph
    from ._settings import SchedulerSettings
    from ._state import RunStateStore
    from ._step import Step

__all__ = ("Engine", "Run", "RunResult")

_cancelled = anyio.get_cancelled_exc_class
_MAX_ERROR_CHARS = 2000


class RunResult(msgspec.Struct, frozen=True):
    """The outcome of a run.

    Attributes:
        run_id: The run.
        outputs: Node id → output, for every node that succeeded (now, from the cache, or restored).
        statuses: Node id → final `NodeStatus`, for every node.
    """

    run_id: str
    outputs: dict[str, Any]
    statuses: dict[str, NodeStatus]


class Engine:
    """What every run of one scheduler shares: store, sink, limiter, breakers, flights, time, settings."""

    __slots__ = (
        "breakers",
        "clock",
        "events",
        "flights",
        "limiter",
        "on_failure",
        "policy",
        "random",
        "run_timeout",
        "store",
    )

    def __init__(
        self,
        store: RunStateStore,
        events: EventSink | None,
        settings: SchedulerSettings,
        clock: Clock,
        random: Callable[[], float],
    ) -> None:
        self.store, self.events, self.clock, self.random = store, events, clock, random
        self.breakers, self.flights = Breakers(clock), Flights()
        self.limiter = anyio.CapacityLimiter(settings.max_in_flight)
        self.policy = settings.policy
        self.on_failure: Literal["cancel", "continue"] = settings.on_failure
        self.run_timeout = settings.run_timeout


class Run:
    """Executes one graph for one run id, under one fencing token."""

    def __init__(
        self,
        engine: Engine,
        graph: Graph[Any],
        steps: dict[str, Step],
        run_id: str,
        run_input: Any,
        token: int | None,
    ) -> None:
        self._engine = engine
        self._graph = graph
        self._steps = steps
        self._run_id = run_id
        self._input = run_input
        self._token = token
        self._emit = engine.events.emit if engine.events is not None else None
        self._outputs: dict[str, Any] = {}
        self._statuses: dict[str, NodeStatus] = {}
        self._attempts: dict[str, int] = {}
        self._errors: dict[str, BaseException] = {}
        self._waiting: dict[str, int] = {}
        self._tg: TaskGroup | None = None

    def _set(
        self,
        node: str,
        status: NodeStatus,
        attempt: int,
        error: BaseException | None = None,
        delay: float | None = None,
    ) -> None:
        self._statuses[node] = status
        if self._emit is not None:
            self._emit(NodeEvent(self._run_id, node, status, attempt, self._engine.clock.now(), error, delay))

    async def execute(self, records: dict[str, NodeRecord]) -> RunResult:
        """Run every node not restored from `records`; return the result or raise `RunFailed`."""
        graph, order = self._graph, self._graph.topological_order()
        for node in order:
            record = records.get(node)
            if record is not None and record.status == "succeeded":
                self._outputs[node] = _convert(self._steps[node], record.output)
                self._set(node, NodeStatus.RESTORED, record.attempts)
            else:
                self._set(node, NodeStatus.PENDING, 0)
        statuses = self._statuses
        for node in order:
            if statuses[node] is NodeStatus.PENDING:
                preds = graph.predecessors(node)
                self._waiting[node] = sum(statuses[p] is not NodeStatus.RESTORED for p in preds)
        timeout = self._engine.run_timeout
        try:
            with anyio.move_on_after(timeout if timeout is not None else float("inf")) as scope:
                async with anyio.create_task_group() as tg:
                    self._tg = tg
                    for node in order:
                        if statuses[node] is NodeStatus.PENDING and not self._waiting[node]:
                            tg.start_soon(self._node, node)
        except BaseExceptionGroup as group:  # StaleToken, or a failing event sink
            raise_single(group)
        finally:
            for node in order:  # never started: cancelled (by a failure, the timeout, or the caller)
                if statuses[node] is NodeStatus.PENDING:
                    self._set(node, NodeStatus.CANCELLED, 0)
        result = RunResult(self._run_id, self._outputs, self._statuses)
        if scope.cancelled_caught:
            raise RunTimeout(self._run_id, timeout or 0.0, result, self._errors)
        if self._errors:
            raise RunFailed(self._run_id, self._errors, result)
        return result

    async def _node(self, node: str | None) -> None:
        # A finished node starts the successors it made ready; it continues with the first one itself,
        # so a chain runs in one task (spawning a task costs more than the rest of a node's overhead).
        while node is not None:
            node = await self._run_node(node)

    async def _run_node(self, node: str) -> str | None:
        step = self._steps[node]
        outputs = self._outputs
        upstream = {p: outputs[p] for p in self._graph.predecessors(node)}
        inputs = Inputs(self._run_id, node, self._input, upstream)
        engine = self._engine
        try:
            status, output, attempts = await self._compute(node, step, inputs)
            # Not shielded: a store's commit is atomic, and if it is cancelled the node simply stays
            # unfinished (a resume runs it again).
            record = NodeRecord(status="succeeded", output=output, attempts=attempts, at=engine.clock.now())
            await engine.store.commit(self._run_id, node, record, self._token)
        except _cancelled():
            self._set(node, NodeStatus.CANCELLED, self._attempts.get(node, 0))
            raise
        except StaleToken:
            raise  # this process lost the run: stop it, record nothing
        except Exception as exc:
            await self._failed(node, exc)
            return None
        outputs[node] = output
        self._set(node, status, attempts)
        waiting, statuses = self._waiting, self._statuses
        first: str | None = None
        for nxt in self._graph.successors(node):
            waiting[nxt] -= 1
            if not waiting[nxt] and statuses[nxt] is NodeStatus.PENDING:
                if first is None:
                    first = nxt
                else:
                    assert self._tg is not None
                    self._tg.start_soon(self._node, nxt)
        return first

    async def _compute(self, node: str, step: Step, inputs: Inputs) -> tuple[NodeStatus, Any, int]:
        key = step.key(inputs) if step.key is not None else None
        if key is None:
            output, attempts = await self._attempts_of(node, step, inputs)
            return NodeStatus.SUCCEEDED, output, attempts
        store = self._engine.store
        cached = await store.load_cached(key)
        if cached is not None:
            return NodeStatus.CACHED, _convert(step, cached.output), 0

        async def lead() -> tuple[Any, int, bool]:
            again = await store.load_cached(key)  # a leader may have finished since our first look
            if again is not None:
                return _convert(step, again.output), 0, True
            output, attempts = await self._attempts_of(node, step, inputs)
            record = NodeRecord(
                status="succeeded", output=output, attempts=attempts, at=self._engine.clock.now()
            )
            await store.store_cached(key, record)
            return output, attempts, False

        (output, attempts, reused), shared = await self._engine.flights.run(key, lead)
        if shared or reused:
            return NodeStatus.CACHED, output, 0
        return NodeStatus.SUCCEEDED, output, attempts

    async def _attempts_of(self, node: str, step: Step, inputs: Inputs) -> tuple[Any, int]:
        engine = self._engine
        policy = step.policy or engine.policy
        fn, timeout, attempt = step.fn, policy.timeout, 1
        while True:
            trial = engine.breakers.admit(node, policy)
            self._attempts[node] = attempt
            self._set(node, NodeStatus.RUNNING, attempt)
            limiter = engine.limiter
            try:
                try:
                    limiter.acquire_nowait()  # the common case, without yielding to the event loop twice
                except anyio.WouldBlock:
                    await limiter.acquire()
                try:
                    if timeout is None:
                        output = await fn(inputs)
                    else:
                        with anyio.move_on_after(timeout) as scope:
                            output = await fn(inputs)
                        if scope.cancelled_caught:
                            raise NodeTimeout(node, timeout, attempt)
                finally:
                    limiter.release()
            except _cancelled():
                if trial:
                    engine.breakers.abandoned(node)
                raise
            except Exception as exc:
                engine.breakers.failed(node, policy)
                if attempt > policy.max_retries or not policy.is_retryable(exc):
                    raise
                delay = policy.backoff_delay(attempt, engine.random)
                self._set(node, NodeStatus.RETRYING, attempt, exc, delay)
                if delay > 0:
                    await engine.clock.sleep(delay)
                attempt += 1
                inputs = msgspec.structs.replace(inputs, attempt=attempt)
                continue
            engine.breakers.succeeded(node)
            return output, attempt

    async def _failed(self, node: str, error: Exception) -> None:
        self._errors[node] = error
        attempts = self._attempts.get(node, 0)
        self._set(node, NodeStatus.FAILED, attempts, error)
        text = repr(error)[:_MAX_ERROR_CHARS]
        record = NodeRecord(status="failed", attempts=attempts, error=text, at=self._engine.clock.now())
        with anyio.CancelScope(shield=True):
            await self._engine.store.commit(self._run_id, node, record, self._token)
        if self._engine.on_failure == "cancel":
            assert self._tg is not None
            self._tg.cancel_scope.cancel()
            return
        for later in self._graph.descendants(node):
            if self._statuses[later] is NodeStatus.PENDING:
                self._set(later, NodeStatus.SKIPPED, 0)


def _convert(step: Step, output: Any) -> Any:
    return output if step.output_type is None else msgspec.convert(output, step.output_type)
