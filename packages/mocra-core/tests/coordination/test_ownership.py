"""Ownership: keys split between members (fake members and the real LMDB control plane), cron claims."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import anyio
import pytest

from mocra_cluster import Liveness, LocalControlPlane, owner, partition_of
from mocra_core.coordination import ControlPlaneOwnership, LocalCoordination, SingleNodeOwnership
from mocra_core.engine.generate._cron_claims import CronClaims, owner_key
from mocra_core.modules import Task

if TYPE_CHECKING:
    import pathlib

pytestmark = pytest.mark.anyio

KEYS = [f"shop:account-{i}" for i in range(200)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class _Member:
    def __init__(self, member_id: str) -> None:
        self.member_id = member_id


class FakePlane:
    """Owns keys as the control plane does (rendezvous over `members`), with a membership tests change."""

    def __init__(self, member_id: str, members: list[str]) -> None:
        self.member_id = member_id
        self.view = members

    async def owns_key(self, key: str | bytes) -> bool:
        return owner(partition_of(key), self.view) == self.member_id

    async def live_members(self) -> list[_Member]:
        return [_Member(m) for m in self.view]


async def owned(ownership: ControlPlaneOwnership | SingleNodeOwnership, keys: list[str]) -> set[str]:
    return {key for key in keys if await ownership.owns(key)}


async def test_every_key_has_exactly_one_owner_among_fake_members() -> None:
    members = ["node-a", "node-b", "node-c"]
    nodes = {m: ControlPlaneOwnership(FakePlane(m, members)) for m in members}

    shares = {m: await owned(ownership, KEYS) for m, ownership in nodes.items()}

    counts = Counter(key for share in shares.values() for key in share)
    assert set(counts) == set(KEYS) and set(counts.values()) == {1}
    assert all(30 < len(share) < 110 for share in shares.values()), {m: len(s) for m, s in shares.items()}
    assert {await o.member_count() for o in nodes.values()} == {3}
    assert len({o.partition_key("shop:account-7") for o in nodes.values()}) == 1


async def test_a_leaving_member_hands_on_only_its_own_keys() -> None:
    planes = {m: FakePlane(m, ["node-a", "node-b", "node-c"]) for m in ("node-a", "node-b", "node-c")}
    before = {m: await owned(ControlPlaneOwnership(p), KEYS) for m, p in planes.items()}
    for plane in planes.values():
        plane.view = ["node-a", "node-b"]

    after = {m: await owned(ControlPlaneOwnership(planes[m]), KEYS) for m in ("node-a", "node-b")}

    assert after["node-a"] | after["node-b"] == set(KEYS)
    assert before["node-a"] <= after["node-a"] and before["node-b"] <= after["node-b"]
    assert (after["node-a"] - before["node-a"]) | (after["node-b"] - before["node-b"]) == before["node-c"]


async def test_single_node_owns_everything() -> None:
    solo = SingleNodeOwnership()
    assert await owned(solo, KEYS) == set(KEYS)
    assert await solo.member_count() == 1


async def test_two_processes_of_one_lmdb_plane_split_the_keys(tmp_path: pathlib.Path) -> None:
    async with (
        LocalControlPlane(tmp_path, member_id="node-a", sync=False) as a,
        LocalControlPlane(tmp_path, member_id="node-b", sync=False) as b,
    ):
        mine_a = await owned(ControlPlaneOwnership(a), KEYS)
        mine_b = await owned(ControlPlaneOwnership(b), KEYS)
        assert mine_a.isdisjoint(mine_b) and mine_a | mine_b == set(KEYS)
        assert mine_a and mine_b
        assert await ControlPlaneOwnership(a).member_count() == 2
        await b.remove("node-b")  # node-b is gone for good: node-a takes its keys
        assert await owned(ControlPlaneOwnership(a), KEYS) == set(KEYS)


async def test_a_closed_members_keys_move_to_the_live_one_after_its_ttl(tmp_path: pathlib.Path) -> None:
    now = [1_000.0]
    fast = Liveness(heartbeat_interval=0.02, member_ttl=1.0)
    async with LocalControlPlane(
        tmp_path, member_id="node-a", sync=False, clock=lambda: now[0], liveness=fast
    ) as a:
        async with LocalControlPlane(tmp_path, member_id="node-b", sync=False, clock=lambda: now[0]):
            assert await ControlPlaneOwnership(a).member_count() == 2
        now[0] += 1.0  # node-b stopped heartbeating a TTL ago
        with anyio.fail_after(5):
            while [m.member_id for m in await a.live_members()] != ["node-a"]:  # noqa: ASYNC110
                await anyio.sleep(0.01)
        assert await ControlPlaneOwnership(a).member_count() == 1
        assert await owned(ControlPlaneOwnership(a), KEYS) == set(KEYS)
        assert len(await a.members()) == 2  # still listed: nobody removed it


def start_tasks(n: int) -> list[Task]:
    return [Task(module="shop", node="list", account=f"account-{i}") for i in range(n)]


async def test_cron_claims_split_a_fire_between_nodes_once() -> None:
    members = ["node-a", "node-b"]
    store = LocalCoordination()
    claims = {m: CronClaims(ControlPlaneOwnership(FakePlane(m, members)), store) for m in members}
    tasks = start_tasks(20)

    got = {m: await c.claim(tasks, 100.0, misfire_tolerance=5.0) for m, c in claims.items()}

    queued = Counter(owner_key(t) for share in got.values() for t in share)
    assert set(queued) == {owner_key(t) for t in tasks} and set(queued.values()) == {1}
    assert got["node-a"] and got["node-b"]
    again = await claims["node-a"].claim(tasks, 100.0, misfire_tolerance=5.0)  # a redelivered fire
    assert again == []
    assert len(await claims["node-a"].claim(tasks, 101.0, misfire_tolerance=5.0)) == len(got["node-a"])


async def test_a_fire_is_not_doubled_while_views_of_the_membership_differ() -> None:
    """node-a still thinks it is alone (owns everything); node-b already sees both members."""
    store = LocalCoordination()
    stale = CronClaims(ControlPlaneOwnership(FakePlane("node-a", ["node-a"])), store)
    fresh = CronClaims(ControlPlaneOwnership(FakePlane("node-b", ["node-a", "node-b"])), store)
    tasks = start_tasks(20)

    by_b = await fresh.claim(tasks, 100.0, misfire_tolerance=5.0)
    by_a = await stale.claim(tasks, 100.0, misfire_tolerance=5.0)

    assert by_b  # node-b queued its share first
    assert {owner_key(t) for t in by_a} == {owner_key(t) for t in tasks} - {owner_key(t) for t in by_b}


async def test_a_module_without_accounts_fires_on_the_owner_of_its_name() -> None:
    members = ["node-a", "node-b"]
    store = LocalCoordination()
    anonymous = [Task(module="news", node="front")]
    got = {
        m: await CronClaims(ControlPlaneOwnership(FakePlane(m, members)), store).claim(
            anonymous, 100.0, misfire_tolerance=5.0
        )
        for m in members
    }
    assert got[owner(partition_of("news"), members) or ""] == anonymous
    assert sum(len(share) for share in got.values()) == 1


async def test_long_names_get_a_hashed_marker() -> None:
    tasks = [Task(module="m" * 200, node="n", account="a" * 200)]
    claims = CronClaims(SingleNodeOwnership(), LocalCoordination())
    assert await claims.claim(tasks, 1.0, misfire_tolerance=1.0) == tasks
    assert await claims.claim(tasks, 1.0, misfire_tolerance=1.0) == []
