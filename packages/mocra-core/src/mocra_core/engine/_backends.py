"""`open_backends`: opens a `BackendPlan` — cluster node, coordination store, seen set, gate, then the queue.

The queue opens last, once all else is up: a run failing at start leaves no streams on a broker. The
coordination store, seen set and gate on one Redis server share a client (`RedisClients`, measured with
`benchmarks/bench_redis_clients.py`: half the connections, pages/s the same or better); the queue keeps its
own (it retries commands on a stale connection, they must not).

Each backend is a part of the run's `Lifecycle`: `prepare` while it connects, `ready` once up, `stopped`
once closed, or `failed` naming it, what it is and the error (a Redis refusing at start: the run raises,
and the part `queue` is `failed` with `queue (redis://…): BackendUnavailable: …`).
"""

from __future__ import annotations

import dataclasses
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, TypeVar

from ..backends.cluster._plane import open_cluster
from ..backends.redis._clients import RedisClients
from ._jobdir import JobDir
from ._lifecycle import Lifecycle, describe_error

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from contextlib import AbstractAsyncContextManager
    from types import TracebackType

    from mocra_cluster import ControlPlane

    from ..coordination import Coordination
    from ..dedup import SeenSet
    from ..download import DomainGate
    from ..queue import QueueBackend
    from ._plan import BackendPlan

__all__ = ("Backends", "open_backends", "open_part")

_T = TypeVar("_T")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Backends:
    """The opened backends of a run (see `BackendPlan`).

    Attributes:
        plan: What was opened.
        coordination: The job's coordination store.
        seen: The seen set, or None without dedup.
        gate: The job-wide politeness gate, or None.
        queue: The stage queues.
        plane: The cluster node's control plane, or None.
        job_dir: The job dir, or None.
    """

    plan: BackendPlan
    coordination: Coordination
    seen: SeenSet | None
    gate: DomainGate | None
    queue: QueueBackend
    plane: ControlPlane | None = None
    job_dir: JobDir | None = None


@asynccontextmanager
async def open_backends(plan: BackendPlan, lifecycle: Lifecycle | None = None) -> AsyncIterator[Backends]:
    """Open the backends of `plan` in order (the queue last) and close them in reverse on exit.

    Args:
        plan: The run's plan.
        lifecycle: Where each backend's state goes (its part: `cluster`, `coordination`, `seen`, `gate`,
            `queue`); None keeps them nowhere.

    Raises:
        BackendUnavailable: a backend could not be reached (the part is then `failed`, naming it).
        ConfigError: the job dir cannot be created, or a directory is in use.
    """
    life = lifecycle or Lifecycle()
    async with AsyncExitStack() as stack:
        job = None
        if plan.job_dir is not None:
            job = JobDir(plan.job_dir)
            stack.callback(job.close)
        plane = None
        if plan.cluster is not None:
            where = f"node {plan.cluster.node_id} at {plan.cluster.addr}"
            plane = await stack.enter_async_context(
                open_part(life, "cluster", where, open_cluster(plan.cluster))
            )
        redis = RedisClients()  # one client per Redis server for the three below; closed after them
        stack.push_async_callback(redis.aclose)
        coordination = plan.make_coordination(plane, redis)
        await stack.enter_async_context(open_part(life, "coordination", str(plan.coordination), coordination))
        seen = plan.make_seen(coordination, plane, redis)
        if seen is not None:
            await stack.enter_async_context(open_part(life, "seen", str(plan.seen), seen))
        gate = plan.make_gate(redis)
        if gate is not None:
            await stack.enter_async_context(open_part(life, "gate", str(plan.gate), gate))
        queue = plan.make_queue()
        await stack.enter_async_context(open_part(life, "queue", str(plan.queue), queue))
        yield Backends(
            plan=plan, coordination=coordination, seen=seen, gate=gate, queue=queue, plane=plane, job_dir=job
        )


@asynccontextmanager
async def open_part(
    lifecycle: Lifecycle, part: str, what: str, opening: AbstractAsyncContextManager[_T]
) -> AsyncIterator[_T]:
    """Enter `opening` as the part `part` of a run: `prepare`, `ready`, then `stopped` once it is closed.

    An error entering it (or closing it) makes the part `failed`, its cause `"<part> (<what>): <error>"`;
    an error of the body does not (the part is closed, `stopped`).
    """
    lifecycle.move(part, "prepare")
    raised: list[BaseException] = []  # the body's error, if any

    async def settle(
        exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        if isinstance(exc, Exception) and not any(exc is body for body in raised):
            lifecycle.move(part, "failed", cause=f"{part} ({what}): {describe_error(exc)}")
        else:
            lifecycle.move(part, "stopped")
        return False

    async with AsyncExitStack() as stack:
        stack.push_async_exit(settle)  # after `opening` has closed
        value = await stack.enter_async_context(opening)
        lifecycle.move(part, "ready")
        try:
            yield value
        except BaseException as exc:
            raised.append(exc)
            raise
