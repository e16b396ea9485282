"""`Hold`, `JobControl`, `WorkerRegistry` and `JobRegistry` on their own (the store: local and Redis)."""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, cast

import anyio
import pytest

from mocra_core.control import Hold, JobControl, JobRegistry, WorkerInfo, WorkerRegistry
from mocra_core.coordination import LocalCoordination, RedisCoordination

from .conftest import REDIS_URL

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from mocra_core.coordination import Coordination

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["local", "redis"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[Coordination]:
    if request.param == "local":
        async with LocalCoordination() as local:
            yield local
        return
    namespace = f"control-test-{uuid.uuid4().hex}"
    async with RedisCoordination(REDIS_URL, namespace=namespace) as redis:
        yield redis
    import redis as client

    with client.Redis(host="127.0.0.1", port=6379, db=15) as sync:
        for key in sync.scan_iter(match=f"{namespace}*"):
            sync.delete(key)


async def test_a_hold_keeps_waiters_until_resumed_and_a_release_ends_it_for_good() -> None:
    hold = Hold()
    passed: list[str] = []

    async def start(name: str) -> None:
        await hold.wait()
        passed.append(name)

    async with anyio.create_task_group() as tg:
        await start("free")  # not held: at once
        hold.pause()
        tg.start_soon(start, "held")
        await anyio.sleep(0.05)
        assert passed == ["free"]
        hold.resume()
    hold.release()
    hold.pause()  # ignored once released: the run drains

    assert passed == ["free", "held"] and not hold.held


def is_held(hold: Hold) -> bool:
    return hold.held  # read anew (an `assert hold.held` narrows it for mypy)


async def test_a_pause_by_one_worker_holds_the_other_within_a_poll(store: Coordination) -> None:
    mine, theirs = Hold(), Hold()
    operator, worker = JobControl(store, mine), JobControl(store, theirs)
    await operator.start()
    await worker.start()
    async with anyio.create_task_group() as tg:
        tg.start_soon(worker.watch, 0.05)
        assert await operator.pause() == "paused"
        assert mine.held  # this process: at once
        await anyio.sleep(0.2)
        assert theirs.held and await worker.state() == "paused"
        assert await operator.resume() == "running"
        await anyio.sleep(0.2)
        assert not is_held(theirs)
        tg.cancel_scope.cancel()


async def test_a_stop_ends_the_running_workers_not_the_next_run(store: Coordination) -> None:
    stopped: list[str] = []
    hold = Hold()
    worker = JobControl(store, hold, on_stop=lambda: stopped.append("worker"))
    await worker.start()
    await JobControl(store).pause()  # a paused worker is stopped too
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(worker.watch, 0.05)
            await anyio.sleep(0.2)
            assert hold.held
            assert await JobControl(store).stop() == "stopping"
    later = JobControl(store, Hold())
    await later.start()

    assert stopped == ["worker"] and worker.stopping and not hold.held
    assert await worker.state() == "stopping"
    assert not later.stopping and await later.state() == "running"  # a stop also ends the pause


async def test_a_worker_joining_a_paused_job_starts_held(store: Coordination) -> None:
    await JobControl(store).pause()
    hold = Hold()
    await JobControl(store, hold).start()

    assert hold.held


def info(worker: str) -> WorkerInfo:
    now = time.time()
    return WorkerInfo(id=worker, host="h", pid=1, started=now, seen=now, state="active", responses=3)


async def test_workers_appear_and_vanish_after_their_ttl_or_when_they_stop(store: Coordination) -> None:
    workers = WorkerRegistry(store, ttl=0.5, interval=0.1)
    killed = info("h:1:1")
    await workers.join(killed.id)
    await workers.beat(killed)  # then `kill -9`: no more heartbeats, no leave
    async with anyio.create_task_group() as tg:
        tg.start_soon(workers.beat_every, "h:2:1", lambda: info("h:2:1"))
        await anyio.sleep(0.2)
        both = [worker.id for worker in await workers.live()]
        await anyio.sleep(0.6)
        one = [worker.id for worker in await workers.live()]
        tg.cancel_scope.cancel()  # the run ended: it leaves at once
    none = await workers.live()

    assert both == ["h:1:1", "h:2:1"]
    assert one == ["h:2:1"]
    assert none == []


class View:
    """A stand-in `JobView`: the registry reads only `job`."""

    def __init__(self, job: str) -> None:
        self.job = job


def test_the_registry_keeps_the_last_finished_jobs_and_every_running_one() -> None:
    registry = JobRegistry(keep=2)
    running = View("running")
    registry.add(running)  # type: ignore[arg-type]
    for n in range(4):
        view = View(f"done{n}")
        registry.add(view)  # type: ignore[arg-type]
        registry.finished(view)  # type: ignore[arg-type]
    again = View("done3")
    registry.add(again)  # type: ignore[arg-type]  # the job runs again: its new view replaces the old

    assert [view.job for view in registry.views()] == ["running", "done2", "done3"]
    assert registry.get("done3") is cast("object", again) and registry.get("done0") is None
    registry.remove("running")
    assert registry.get("running") is None and len(registry) == 2
