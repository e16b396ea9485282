"""A small `JobView` over real `Stats` for the admin server's tests, and a server on a free port."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Sequence

import httpx

from mocra_core.admin import AdminContext, serving
from mocra_core.config import AdminSettings
from mocra_core.control import ControlState, FailureView, JobRegistry, JobSnapshot, QueueDepth
from mocra_core.observe import Stats


class FakeView:
    """A job that counts what it is asked: its `Stats` are real, its queues a list of dead letters."""

    def __init__(self, job: str = "books", *, state: str = "active") -> None:
        self._job = job
        self._stats = Stats()
        self.state = state
        self.control_state: ControlState = "running"
        self.letters = [
            FailureView(topic="request", id=f"m{n}", url=f"http://x/{n}", attempt=3, reason="503")
            for n in range(3)
        ]
        self.snapshots = 0

    @property
    def job(self) -> str:
        return self._job

    @property
    def stats(self) -> Stats:
        return self._stats

    async def snapshot(self) -> JobSnapshot:
        self.snapshots += 1
        return JobSnapshot(
            job=self._job,
            state=self.state,
            control=self.control_state,
            stats=self._stats.snapshot(),
            run=self._stats.snapshot(),
            queues={"request": QueueDepth(pending=2, dead=len(self.letters))},
            time=time.time(),
        )

    async def dead_letters(self, topic: str | None = None, *, limit: int = 100) -> Sequence[FailureView]:
        return [d for d in self.letters if topic in (None, d.topic)][:limit]

    async def replay(self, topics: Sequence[str] | None = None) -> int:
        back = [d for d in self.letters if topics is None or d.topic in topics]
        self.letters = [d for d in self.letters if d not in back]
        return len(back)

    async def control(self) -> ControlState:
        return self.control_state

    async def pause(self) -> ControlState:
        self.control_state = "paused"
        return self.control_state

    async def resume(self) -> ControlState:
        self.control_state = "running"
        return self.control_state

    async def stop(self) -> ControlState:
        self.control_state = "stopping"
        return self.control_state


@contextlib.asynccontextmanager
async def api(
    *views: FakeView, settings: AdminSettings | None = None, **context: object
) -> AsyncIterator[httpx.AsyncClient]:
    """The admin server on 127.0.0.1 (a free port) over `views`, and a client of it."""
    registry = JobRegistry()
    for view in views:
        registry.add(view)
    context.setdefault("readiness", lambda: (True, "idle"))
    admin = AdminContext(jobs=registry, settings=settings or AdminSettings(), **context)  # type: ignore[arg-type]
    async with serving(admin, "127.0.0.1:0") as server, httpx.AsyncClient(base_url=server.url) as client:
        yield client
