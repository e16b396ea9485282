"""Account affinity: on a cluster, an account's tasks and requests carry its partition's queue key."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

import pytest

from mocra_cluster import LocalControlPlane, partition_of
from mocra_core.config import Settings
from mocra_core.coordination import ControlPlaneOwnership, LocalCoordination
from mocra_core.engine import Engine
from mocra_core.engine._admission import Admission
from mocra_core.engine._frontier import REQUESTS, Frontier
from mocra_core.engine._module_table import ModuleTable
from mocra_core.engine._router import TaskRouter
from mocra_core.engine._runbook import RunBook
from mocra_core.http import Request, Routing
from mocra_core.middleware import MiddlewareChain
from mocra_core.modules import Account, Module, Node, Task, TaskCtx, compile_module
from mocra_core.observe import Stats
from mocra_core.queue import MemoryQueue
from mocra_core.topics import TASKS

if TYPE_CHECKING:
    import pathlib

    from mocra_core.testing import LocalServer

pytestmark = pytest.mark.anyio

ACCOUNTS = ("alice", "bob", "dave")  # three partitions (carol shares bob's: see below)


def shop(base: str = "http://127.0.0.1:9") -> Module[Any]:
    class Pages(Node[Any]):
        id = "pages"

        async def generate(self, ctx: TaskCtx[Any]) -> None:
            for i in range(3):
                ctx.get(f"{base}/{ctx.account}/{i}")

    class Shop(Module[Any]):
        name = "shop"
        accounts = tuple(Account(name=name) for name in ACCOUNTS)

        def nodes(self) -> Any:
            return [Pages()]

    return Shop()


async def test_tasks_and_requests_of_an_account_carry_its_partition_key(tmp_path: pathlib.Path) -> None:
    module = compile_module(shop())
    async with LocalControlPlane(tmp_path, member_id="node-a", sync=False) as plane, MemoryQueue() as queue:
        stats = Stats()
        ownership = ControlPlaneOwnership(plane)
        runbook = RunBook(LocalCoordination())
        router = TaskRouter(
            queue, ModuleTable({"shop": module}, queue), runbook, affinity=ownership.partition_key
        )
        admission = Admission(Frontier(queue, None, stats), runbook, router, stats)
        await router.seed([Task(module="shop", node="pages", account=a) for a in (*ACCOUNTS, None)])
        bob = Routing("shop/pages", run="shop:bob:1", account="bob")
        await admission.admit(module, [Request(f"http://127.0.0.1:9/bob/{i}") for i in range(2)], bob)

        tasks = await queue.consume(TASKS, group="t", max_messages=10, wait=0)
        requests = await queue.consume(REQUESTS, group="r", max_messages=10, wait=0)

    keyed = {d.payload.account: d.key for d in tasks if isinstance(d.payload, Task)}
    assert keyed == {a: f"p{partition_of(f'shop:{a}')}" for a in ACCOUNTS} | {None: None}
    assert [d.key for d in requests] == [f"p{partition_of('shop:bob')}"]  # the second waits for the first


async def test_without_affinity_nothing_is_keyed() -> None:
    module = compile_module(shop())
    async with MemoryQueue() as queue:
        router = TaskRouter(queue, ModuleTable({"shop": module}, queue), RunBook(LocalCoordination()))
        await router.seed([Task(module="shop", node="pages", account=a) for a in ACCOUNTS])
        tasks = await queue.consume(TASKS, group="t", max_messages=10, wait=0)
    assert [d.key for d in tasks] == [None, None, None]


async def test_accounts_of_one_partition_share_its_lane(tmp_path: pathlib.Path) -> None:
    assert partition_of("shop:bob") == partition_of("shop:carol")
    module = compile_module(shop())
    async with LocalControlPlane(tmp_path, member_id="node-a", sync=False) as plane, MemoryQueue() as queue:
        ownership = ControlPlaneOwnership(plane)
        router = TaskRouter(
            queue, ModuleTable({"shop": module}, queue), RunBook(LocalCoordination()),
            affinity=ownership.partition_key,
        )  # fmt: skip
        await router.seed([Task(module="shop", node="pages", account=a) for a in ("bob", "carol")])
        [first] = await queue.consume(TASKS, group="t", max_messages=10, wait=0)
        assert await queue.consume(TASKS, group="t", max_messages=10, wait=0) == []  # one at a time
        await queue.ack([first])
        [second] = await queue.consume(TASKS, group="t", max_messages=10, wait=0)
    assert [first.payload.account, second.payload.account] == ["bob", "carol"]  # type: ignore[attr-defined]


async def test_a_cluster_crawl_with_account_affinity_fetches_every_page(
    tmp_path: pathlib.Path, server: LocalServer
) -> None:
    settings = Settings.from_mapping({"crawl": {"account_affinity": True, "obey_robots": False}})
    async with LocalControlPlane(tmp_path, member_id="node-a", sync=False) as plane:
        engine = Engine(
            [(compile_module(shop(server.base_url)), None)], settings, MiddlewareChain(), {},
            ownership=ControlPlaneOwnership(plane),
        )  # fmt: skip
        result = await engine.run()
    assert result.reason == "finished" and result.ok
    fetched = Counter(path.split("/")[1] for path in server.hits if path.count("/") == 2)
    assert fetched == dict.fromkeys(ACCOUNTS, 3)
