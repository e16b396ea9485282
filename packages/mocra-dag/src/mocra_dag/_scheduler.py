"""`Scheduler`: runs graphs of async node functions, guarded, fenced, resumable and observable."""

from __future__ import annotations

import random as _random
import uuid
from typing import TYPE_CHECKING, Any

from ._clock import SystemClock
from ._guard import RunGuard
from ._lease import MemoryLeaseStore
from ._run import Engine, Run
from ._settings import SchedulerSettings
from ._state import MemoryRunStateStore
from ._step import as_step

if TYPE_CHECKING:
    from collections.abc import Callable

    from ._clock import Clock
    from ._events import EventSink
    from ._graph import Graph
    from ._run import RunResult
    from ._state import RunStateStore

__all__ = ("Scheduler",)


class Scheduler:
    """Runs graphs whose nodes carry async functions (or `Step`s), many runs at once.

    A node starts when all its predecessors have succeeded and receives `Inputs`: the run's input and a
    mapping predecessor id → output. Each node follows its `NodePolicy` (retries with jittered backoff,
    per-attempt timeout, circuit breaker). A run:

    1. takes the run id's lease from the guard (`RunAlreadyActive` if it is held elsewhere) and keeps it
       renewed; its token fences every write to the store (`StaleToken` if another holder took over);
    2. loads the run's records: nodes that succeeded in an earlier attempt of the run are `RESTORED`,
       not re-run, so calling `run` again with the same `run_id` after a failure resumes it;
    3. runs the other nodes, at most `max_in_flight` attempts at once across the scheduler; a node with an
       idempotency key reuses a cached output, and concurrent nodes with one key run once;
    4. commits each node's record as it finishes, and reports every state change to the event sink;
    5. returns a `RunResult`, or raises `RunFailed` (carrying the partial result) or `RunTimeout`.

    Outputs are passed to successors as the objects the nodes returned; the store keeps them as msgpack,
    so they must be msgpack-serialisable (see `RunStateStore`; `MemoryRunStateStore(serialise=False)`
    lifts that). The in-memory defaults keep state for the lifetime of the scheduler; pass shared or
    durable stores to guard and resume runs across schedulers and processes.

    Args:
        store: Node records and the output cache; defaults to a new `MemoryRunStateStore`.
        guard: Run-id leases; defaults to a `RunGuard` over a new `MemoryLeaseStore` (on `clock`).
        events: Receives every `NodeEvent`; None: no events.
        settings: Concurrency, failure mode, run timeout, default node policy.
        clock: Time for backoff sleeps, breaker windows and event timestamps (timeouts use the event loop).
        random: Returns floats in [0, 1) for backoff jitter.

    Example:
        >>> import anyio
        >>> from mocra_dag import Graph, Inputs
        >>> async def numbers(inputs: Inputs) -> list[int]:
        ...     return list(range(inputs.input))
        >>> async def total(inputs: Inputs) -> int:
        ...     return sum(inputs.value)
        >>> graph = Graph.chain(("numbers", numbers), ("total", total))
        >>> anyio.run(lambda: Scheduler().run(graph, run_id="sum-5", input=5)).outputs
        {'numbers': [0, 1, 2, 3, 4], 'total': 10}
    """

    __slots__ = ("_engine", "_guard", "settings")

    def __init__(
        self,
        *,
        store: RunStateStore | None = None,
        guard: RunGuard | None = None,
        events: EventSink | None = None,
        settings: SchedulerSettings | None = None,
        clock: Clock | None = None,
        random: Callable[[], float] | None = None,
    ) -> None:
        clock = clock or SystemClock()
        self.settings = settings or SchedulerSettings()
        self._guard = guard or RunGuard(MemoryLeaseStore(clock=clock), clock=clock)
        self._engine = Engine(
            store or MemoryRunStateStore(), events, self.settings, clock, random or _random.random
        )

    @property
    def store(self) -> RunStateStore:
        """The run-state store."""
        return self._engine.store

    @property
    def guard(self) -> RunGuard:
        """The run guard."""
        return self._guard

    def is_circuit_open(self, node: str) -> bool:
        """Whether calls of node id `node` currently fail fast with `CircuitOpen`."""
        return self._engine.breakers.is_open(node)

    async def run(self, graph: Graph[Any], *, run_id: str | None = None, input: Any = None) -> RunResult:
        """Run `graph` once for `run_id` (resuming it if it ran before) and return its outputs.

        Args:
            graph: Nodes carrying async functions `async def fn(inputs: Inputs) -> output` or `Step`s
                (checked when the run starts, so graphs mixing both need no annotation).
            run_id: Identifies the run for guarding and resuming; a fresh id when None (then the run's
                records are deleted after it succeeds, since nobody could resume it).
            input: Passed to every node as `inputs.input` (not stored: pass the same one to resume).

        Raises:
            TypeError: A node payload is neither an async callable nor a `Step`.
            RunAlreadyActive: The run id is held by another run.
            RunFailed: A node failed for good; `.errors` and `.result` tell which and what succeeded.
            RunTimeout: The run exceeded `settings.run_timeout`.
            StaleToken: The run's lease was taken over by another holder; this run was stopped.
        """
        fresh = run_id is None
        if run_id is None:
            run_id = uuid.uuid4().hex
        elif not isinstance(run_id, str) or not run_id or "\x00" in run_id:
            raise ValueError(f"run_id must be a non-empty string without NUL, got {run_id!r}")
        steps = {node: as_step(node, payload) for node, payload in graph.nodes.items()}
        store = self._engine.store
        async with self._guard.hold(run_id) as lease:
            records = await store.begin(run_id, lease.token)
            result = await Run(self._engine, graph, steps, run_id, input, lease.token).execute(records)
            if fresh:
                await store.delete(run_id)
        return result
