"""The page budget (`crawl.max_pages`): counted in one process, or shared by the workers of a job."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import anyio
import pytest

from mocra_core.coordination import LmdbCoordination, LocalCoordination, RedisCoordination
from mocra_core.engine._budget import BUDGET_KEY, LocalBudget, SharedBudget, page_budget

if TYPE_CHECKING:
    import pathlib
    from collections.abc import AsyncIterator

    from mocra_core.coordination import Coordination

pytestmark = pytest.mark.anyio

REDIS_URL = "redis://127.0.0.1:6379/0"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=["local", "lmdb", "redis"])
async def store(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> AsyncIterator[Coordination]:
    """A job's coordination store of each kind (Redis: a namespace of its own, deleted afterwards)."""
    if request.param == "local":
        coordination: Coordination = LocalCoordination()
    elif request.param == "lmdb":
        coordination = LmdbCoordination(tmp_path / "coordination")
    else:
        coordination = RedisCoordination(REDIS_URL, namespace=f"mocra-test-{uuid.uuid4().hex}")
    async with coordination:
        yield coordination
        await coordination.delete(BUDGET_KEY)


async def take_all(budget: SharedBudget | LocalBudget, tasks: int, per_task: int) -> int:
    """Take pages from `tasks` tasks at once, `per_task` tries each; how many were granted."""
    granted = 0

    async def taker() -> None:
        nonlocal granted
        for _ in range(per_task):
            if await budget.take():
                granted += 1
            await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tg:
        for _ in range(tasks):
            tg.start_soon(taker)
    return granted


async def test_a_local_budget_grants_exactly_its_limit_to_concurrent_takers() -> None:
    budget = LocalBudget(50)

    assert await take_all(budget, tasks=16, per_task=10) == 50
    assert budget.spent


async def test_a_resumed_local_budget_counts_the_earlier_downloads() -> None:
    budget = LocalBudget(10, used=8)

    assert [await budget.take() for _ in range(3)] == [True, True, False]
    assert LocalBudget(10, used=10).spent  # spent before any take: the run stops at once


async def test_workers_of_a_job_share_one_budget(store: Coordination) -> None:
    workers = [SharedBudget(1000, store) for _ in range(3)]
    granted = [0] * len(workers)

    async def work(index: int) -> None:  # a worker: 8 download tasks that each try 200 times
        granted[index] = await take_all(workers[index], tasks=8, per_task=200)

    async with anyio.create_task_group() as tg:
        for index in range(len(workers)):
            tg.start_soon(work, index)

    assert sum(granted) == 1000  # job-wide, not 1,000 per worker
    assert all(count > 0 for count in granted)  # each got a share: the blocks are small
    assert all(worker.spent for worker in workers)
    assert await store.get(BUDGET_KEY) == b"1000"  # claims never pass the budget


async def test_pages_a_worker_claimed_and_did_not_use_stay_unused(store: Coordination) -> None:
    idle, busy = SharedBudget(1000, store), SharedBudget(1000, store)
    assert await idle.take()  # claims a block of 1000 // 64 pages, uses one, then (say) dies

    assert await take_all(busy, tasks=4, per_task=500) == 1000 - 15  # at most the budget, job-wide


async def test_a_larger_budget_goes_on_from_what_the_job_used(store: Coordination) -> None:
    assert await take_all(SharedBudget(40, store), tasks=1, per_task=100) == 40

    assert await take_all(SharedBudget(40, store), tasks=1, per_task=100) == 0  # the job's budget is spent
    assert await take_all(SharedBudget(100, store), tasks=1, per_task=100) == 60


async def test_page_budget_picks_the_budget_by_how_the_job_runs() -> None:
    async with LocalCoordination() as store:
        assert page_budget(None, store, shared=True) is None
        assert isinstance(page_budget(5, store, shared=False, used=2), LocalBudget)
        assert isinstance(page_budget(5, store, shared=True), SharedBudget)
