"""`JobOps`: what a run does for its operators — follows the job's control keys, beats, shows its view.

Made by the engine once its backends are open (`JobOps.open`); its two tasks (`tasks`) run beside the
stages: the control watcher (pause, resume, stop: `JobControl.watch`) and the worker's heartbeat
(`WorkerRegistry.beat_every`).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import socket
import time
from typing import TYPE_CHECKING

from ..control import JobControl, WorkerInfo, WorkerRegistry, new_worker_id
from ._job_view import EngineJobView

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Sequence
    from typing import Any

    from ..control import Hold
    from ..download import ProxyRoute
    from ..observe import Stats
    from ._activity import ActivityQueue
    from ._backends import Backends

__all__ = ("JobOps",)


@dataclasses.dataclass(frozen=True)
class JobOps:
    """A run's control watcher, heartbeat and view.

    Attributes:
        view: The run's view of its job.
        tasks: What runs beside the stages (the watcher and the heartbeat), until cancelled.
    """

    view: EngineJobView
    tasks: Sequence[Callable[[], Coroutine[Any, Any, None]]]

    @classmethod
    async def open(
        cls,
        backends: Backends,
        queue: ActivityQueue,
        stats: Stats,
        hold: Hold,
        *,
        topics: Sequence[str],
        state: Callable[[], str],
        on_stop: Callable[[], None],
        proxies: ProxyRoute | None = None,
        generations: Callable[[], dict[str, list[int]]] | None = None,
        source: str | None = None,
    ) -> JobOps:
        """Read the job's control keys (a paused job holds this worker at once) and make the view.

        `source` is the run's own file (`--reload`), what a deploy through the admin API prepares.
        `generations` tells the heartbeat the generations of each module this worker has code of.

        Raises:
            CoordinationError: the store failed.
        """
        coordination, plan = backends.coordination, backends.plan
        control = JobControl(coordination, hold, on_stop=on_stop)
        await control.start()
        workers = WorkerRegistry(coordination)
        view = EngineJobView(
            plan.job,
            state=state,
            stats=stats,
            queue=queue,
            topics=topics,
            coordination=coordination,
            control=control,
            workers=workers,
            shared=plan.shared,
            plane=backends.plane,
            proxies=proxies,
            source=source,
        )
        worker = new_worker_id()
        describe = functools.partial(_describe, worker, time.time(), state, stats, generations)
        return cls(view, (control.watch, functools.partial(workers.beat_every, worker, describe)))


def _describe(
    worker: str,
    started: float,
    state: Callable[[], str],
    stats: Stats,
    generations: Callable[[], dict[str, list[int]]] | None = None,
) -> WorkerInfo:
    elapsed = stats.elapsed
    return WorkerInfo(
        id=worker,
        host=socket.gethostname(),
        pid=os.getpid(),
        started=started,
        seen=time.time(),
        state=state(),
        responses=stats.responses,
        items=stats.items,
        pages_per_second=stats.responses / elapsed if elapsed > 0 else 0.0,
        generations={} if generations is None else generations(),
    )
