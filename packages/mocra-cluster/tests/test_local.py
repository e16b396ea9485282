"""LocalControlPlane in one process: the ControlPlane calls over LMDB, with a fake clock for expiry."""

from __future__ import annotations

import pathlib
from collections.abc import AsyncIterator

import anyio
import pytest

from mocra_cluster import (
    PARTITIONS,
    ClusterClosed,
    ClusterError,
    ClusterStatus,
    ControlPlane,
    Liveness,
    LocalControlPlane,
    LockInfo,
    Message,
    partition_of,
)

pytestmark = pytest.mark.anyio


class FakeClock:
    def __init__(self, now: float = 1_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def plane(tmp_path: pathlib.Path, clock: FakeClock) -> AsyncIterator[LocalControlPlane]:
    async with LocalControlPlane(tmp_path, clock=clock, sync=False, poll_interval=0.01) as found:
        yield found


async def test_it_is_a_control_plane(plane: LocalControlPlane) -> None:
    def accepts(found: ControlPlane) -> ControlPlane:
        return found

    assert accepts(plane) is plane


async def test_kv_with_ttl_and_cas(plane: LocalControlPlane, clock: FakeClock) -> None:
    await plane.set("a", b"1", ttl=5)
    assert await plane.get("a") == b"1"
    clock.now += 5
    assert await plane.get("a") is None
    assert await plane.compare_and_set("a", None, b"2") is True
    assert await plane.compare_and_set("a", b"1", b"3") is False
    assert await plane.compare_and_set("a", b"2", None) is True
    assert await plane.delete("a") is False
    await plane.set("b", b"x")
    assert await plane.delete("b") is True


async def test_locks_with_fencing_tokens(plane: LocalControlPlane, clock: FakeClock) -> None:
    token = await plane.acquire_lock("job", "a", ttl=10)
    assert token == 1
    assert await plane.acquire_lock("job", "b", ttl=10) is None
    assert await plane.lock_holder("job") == LockInfo(holder="a", token=1, expires=1010.0)
    clock.now += 8
    assert await plane.renew_lock("job", "a", 1, ttl=10) is True
    clock.now += 9
    assert await plane.acquire_lock("job", "b", ttl=10) is None  # renewed: still a's
    clock.now += 2
    assert await plane.acquire_lock("job", "b", ttl=10) == 2
    assert await plane.renew_lock("job", "a", 1, ttl=10) is False
    assert await plane.release_lock("job", "a", 1) is False
    assert await plane.release_lock("job", "b", 2) is True
    assert await plane.lock_holder("job") is None


async def test_status_membership_and_partitions(tmp_path: pathlib.Path, clock: FakeClock) -> None:
    async with LocalControlPlane(tmp_path, member_id="p1", clock=clock, sync=False) as plane:
        assert await plane.is_leader() is True
        assert await plane.owned_partitions() == list(range(PARTITIONS))  # alone: owns all
        assert await plane.join("p2", "host:2") is True
        assert await plane.join("learner", "host:3", voter=False) is True
        assert [m.member_id for m in await plane.members()] == ["learner", "p1", "p2"]
        assert [m.member_id for m in await plane.voters()] == ["p1", "p2"]
        mine = await plane.owned_partitions()
        assert 0 < len(mine) < PARTITIONS
        keys = [f"item-{i}" for i in range(200)]
        owned = [key for key in keys if await plane.owns_key(key)]
        assert owned == [key for key in keys if partition_of(key) in mine]
        status = await plane.status()
        assert status == ClusterStatus(node_id="p1", leader="p1", term=1, applied_index=3, members=3)
        assert await plane.remove("p2") is True
        assert await plane.remove("p2") is False


async def live_ids(plane: LocalControlPlane) -> list[str]:
    return [m.member_id for m in await plane.live_members()]


async def test_heartbeats_keep_a_member_live_and_a_closed_ones_partitions_move(
    tmp_path: pathlib.Path, clock: FakeClock
) -> None:
    fast = Liveness(heartbeat_interval=0.02, member_ttl=1.0)
    async with LocalControlPlane(tmp_path, member_id="a", clock=clock, sync=False, liveness=fast) as a:
        async with LocalControlPlane(tmp_path, member_id="b", clock=clock, sync=False, liveness=fast) as b:
            assert len(await a.owned_partitions()) + len(await b.owned_partitions()) == PARTITIONS
            clock.now += 10  # both stay live: their next heartbeats carry the new time
            with anyio.fail_after(5):
                while await live_ids(a) != ["a", "b"]:  # noqa: ASYNC110 - the heartbeat tasks write
                    await anyio.sleep(0.01)
            assert 0 < len(await a.owned_partitions()) < PARTITIONS
        clock.now += 1.0  # b is closed: its last heartbeat is a TTL old; a's next one is fresh
        with anyio.fail_after(5):
            while await live_ids(a) != ["a"]:  # noqa: ASYNC110
                await anyio.sleep(0.01)
        assert [m.member_id for m in await a.members()] == ["a", "b"]  # listed until removed
        assert await a.owned_partitions() == list(range(PARTITIONS))
        assert all([await a.owns_key(f"item-{i}") for i in range(50)])


async def test_an_entered_plane_cannot_be_entered_again(tmp_path: pathlib.Path) -> None:
    async with LocalControlPlane(tmp_path, sync=False) as plane:
        with pytest.raises(ClusterError, match="entered once"):
            await plane.__aenter__()


async def test_partition_leases(plane: LocalControlPlane, clock: FakeClock) -> None:
    token = await plane.acquire_partition(7, ttl=10)
    assert token == 1
    assert await plane.acquire_partition(7, ttl=10) == 2  # same member: a new token
    assert await plane.renew_partition(7, 1, ttl=10) is False
    assert await plane.renew_partition(7, 2, ttl=10) is True
    assert await plane.partition_lease(7) == LockInfo(holder="local", token=2, expires=1010.0)
    assert await plane.release_partition(7, 2) is True
    assert await plane.partition_lease(7) is None
    with pytest.raises(ValueError, match="partition must be an int from 0 to 255"):
        await plane.acquire_partition(256, ttl=1)


async def test_publish_subscribe_in_order_with_wake_up(plane: LocalControlPlane) -> None:
    await plane.publish("events", b"before")  # not seen: published before subscribe()
    received: list[Message] = []

    async def consume() -> None:
        async for message in plane.subscribe("events"):
            received.append(message)
            if len(received) == 3:
                return

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            for i in range(3):
                await plane.publish("events", b"m%d" % i)
    assert [(m.seq, m.payload) for m in received] == [(2, b"m0"), (3, b"m1"), (4, b"m2")]


async def test_subscribe_from_seq_sees_the_kept_window(plane: LocalControlPlane) -> None:
    for i in range(6):
        await plane.publish("log", b"%d" % i, keep=3)
    seen = []
    with anyio.fail_after(5):
        async for message in plane.subscribe("log", from_seq=1):
            seen.append(message.seq)
            if message.seq == 6:
                break
    assert seen == [4, 5, 6]  # 1-3 were trimmed: the gap shows what was missed


async def test_subscription_ends_when_the_plane_closes(tmp_path: pathlib.Path) -> None:
    plane = LocalControlPlane(tmp_path, sync=False, poll_interval=10)
    seen: list[Message] = []

    async def consume() -> None:
        async for message in plane.subscribe("t"):
            seen.append(message)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await anyio.sleep(0.05)
            await plane.aclose()
    assert seen == []


async def test_calls_after_close_raise(tmp_path: pathlib.Path) -> None:
    plane = LocalControlPlane(tmp_path, sync=False)
    await plane.aclose()
    await plane.aclose()  # idempotent
    with pytest.raises(ClusterClosed):
        await plane.get("a")
    with pytest.raises(ClusterClosed):
        await plane.set("a", b"1")


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda p: p.get(""), "key must be 1 to 256 UTF-8 bytes"),
        (lambda p: p.set("a\0b", b""), "key must be 1 to 256"),
        (lambda p: p.set("a", b"", ttl=0), "ttl must be a finite number of seconds > 0, got 0"),
        (lambda p: p.acquire_lock("a", "h" * 300, 1), "holder must be 1 to 256"),
        (lambda p: p.acquire_lock("a", "h", float("inf")), "ttl must be"),
        (lambda p: p.publish("t", b"", keep=0), "keep must be an int >= 1, got 0"),
        (lambda p: p.join("", "addr"), "member_id must be"),
    ],
)
async def test_bad_arguments_name_the_problem(plane: LocalControlPlane, call: object, message: str) -> None:
    before = (await plane.status()).applied_index
    with pytest.raises(ValueError, match=message):
        await call(plane)  # type: ignore[operator]
    assert (await plane.status()).applied_index == before  # nothing was proposed


async def test_two_planes_in_one_process_share_the_directory(tmp_path: pathlib.Path) -> None:
    async with (
        LocalControlPlane(tmp_path, member_id="a", sync=False) as one,
        LocalControlPlane(tmp_path, member_id="b", sync=False) as two,
    ):
        assert await one.acquire_lock("x", "a", ttl=30) == 1
        assert await two.acquire_lock("x", "b", ttl=30) is None
        await two.set("k", b"v")
        assert await one.get("k") == b"v"
        assert sorted(await one.owned_partitions() + await two.owned_partitions()) == list(range(PARTITIONS))
