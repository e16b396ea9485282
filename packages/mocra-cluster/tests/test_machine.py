"""StateMachine semantics: KV with expiry, CAS, fenced locks, membership, partition leases, topic logs."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator

import pytest

from mocra_cluster import (
    PARTITIONS,
    AcquireLock,
    AcquirePartition,
    CompareAndSet,
    Delete,
    Heartbeat,
    Join,
    LmdbStateStore,
    LockInfo,
    MemoryStateStore,
    Publish,
    Purge,
    ReleaseLock,
    ReleasePartition,
    Remove,
    RenewLock,
    RenewPartition,
    Set,
    StateMachine,
    assignment,
    encode_command,
)


@pytest.fixture(params=["memory", "lmdb"])
def machine(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[StateMachine]:
    if request.param == "memory":
        yield StateMachine(MemoryStateStore())
        return
    store = LmdbStateStore(tmp_path / "state", sync=False)
    try:
        yield StateMachine(store)
    finally:
        store.close()


def test_set_get_and_expiry_judged_by_now(machine: StateMachine) -> None:
    machine.apply(Set(key="a", value=b"1", now=100.0, ttl=5))
    machine.apply(Set(key="b", value=b"2", now=100.0))
    assert machine.get("a", now=104.9) == b"1"
    assert machine.get("a", now=105.0) is None
    assert machine.get("b", now=1e12) == b"2"
    assert machine.get("missing", now=100.0) is None


def test_delete_says_whether_a_live_value_was_removed(machine: StateMachine) -> None:
    machine.apply(Set(key="a", value=b"1", now=100.0, ttl=5))
    assert machine.apply(Delete(key="a", now=200.0)) is False  # expired: removed, but was not live
    assert machine.store.get(b"k/a") is None
    machine.apply(Set(key="a", value=b"1", now=100.0))
    assert machine.apply(Delete(key="a", now=101.0)) is True
    assert machine.apply(Delete(key="a", now=101.0)) is False


def test_compare_and_set(machine: StateMachine) -> None:
    assert machine.apply(CompareAndSet(key="a", expected=b"x", value=b"1", now=1.0)) is False
    assert machine.apply(CompareAndSet(key="a", expected=None, value=b"1", now=1.0, ttl=10)) is True
    assert machine.apply(CompareAndSet(key="a", expected=None, value=b"2", now=2.0)) is False
    assert machine.apply(CompareAndSet(key="a", expected=b"1", value=b"2", now=2.0)) is True
    assert machine.get("a", now=3.0) == b"2"
    assert machine.apply(CompareAndSet(key="a", expected=b"2", value=None, now=3.0)) is True
    assert machine.get("a", now=3.0) is None
    machine.apply(Set(key="e", value=b"old", now=1.0, ttl=1))
    assert (
        machine.apply(CompareAndSet(key="e", expected=None, value=b"new", now=5.0)) is True
    )  # expired = absent


def test_locks_exclude_and_tokens_increase(machine: StateMachine) -> None:
    first = machine.apply(AcquireLock(key="job", holder="a", ttl=10, now=100.0))
    assert first == 1
    assert machine.apply(AcquireLock(key="job", holder="b", ttl=10, now=105.0)) is None
    again = machine.apply(AcquireLock(key="job", holder="a", ttl=10, now=106.0))  # same holder: new token
    assert again == 2
    assert machine.apply(RenewLock(key="job", holder="a", token=1, ttl=10, now=107.0)) is False
    assert machine.apply(ReleaseLock(key="job", holder="a", token=1)) is False
    other = machine.apply(AcquireLock(key="other", holder="b", ttl=10, now=107.0))
    assert other == 3  # one counter for every lock
    assert machine.fence == 3
    assert machine.lock("job", now=107.0) == LockInfo(holder="a", token=2, expires=116.0)


def test_renew_extends_and_works_past_expiry_until_someone_else_acquires(machine: StateMachine) -> None:
    token = machine.apply(AcquireLock(key="job", holder="a", ttl=10, now=100.0))
    assert isinstance(token, int)
    assert machine.apply(RenewLock(key="job", holder="a", token=token, ttl=10, now=108.0)) is True
    assert machine.lock("job", now=117.0) == LockInfo(holder="a", token=token, expires=118.0)
    assert machine.lock("job", now=118.0) is None  # expired
    assert machine.apply(RenewLock(key="job", holder="a", token=token, ttl=10, now=120.0)) is True
    assert machine.apply(RenewLock(key="job", holder="b", token=token, ttl=10, now=120.0)) is False
    machine.apply(AcquireLock(key="job", holder="b", ttl=1, now=200.0))
    assert machine.apply(RenewLock(key="job", holder="a", token=token, ttl=10, now=200.5)) is False


def test_release_frees_the_lock_for_others(machine: StateMachine) -> None:
    token = machine.apply(AcquireLock(key="job", holder="a", ttl=10, now=100.0))
    assert isinstance(token, int)
    assert machine.apply(ReleaseLock(key="job", holder="b", token=token)) is False
    assert machine.apply(ReleaseLock(key="job", holder="a", token=token)) is True
    assert machine.lock("job", now=100.0) is None
    assert machine.apply(AcquireLock(key="job", holder="b", ttl=10, now=100.0)) == token + 1


def test_membership(machine: StateMachine) -> None:
    assert machine.apply(Join(member_id="n2", addr="h:2", voter=True, now=10.0)) is True
    assert machine.apply(Join(member_id="n1", addr="h:1", voter=False, now=11.0)) is True
    assert machine.apply(Join(member_id="n1", addr="h:9", voter=True, now=12.0)) is False  # update
    assert [m.member_id for m in machine.members()] == ["n1", "n2"]
    n1 = machine.member("n1")
    assert n1 is not None
    assert (n1.addr, n1.voter, n1.joined, n1.seen) == ("h:9", True, 11.0, 12.0)
    assert machine.apply(Heartbeat(member_id="n1", now=20.0)) is True
    assert machine.apply(Heartbeat(member_id="n1", now=15.0)) is True  # an older clock: seen stays
    seen = machine.member("n1")
    assert seen is not None and seen.seen == 20.0
    assert machine.apply(Heartbeat(member_id="ghost", now=20.0)) is False
    assert machine.apply(Remove(member_id="n2")) is True
    assert machine.apply(Remove(member_id="n2")) is False
    assert [m.member_id for m in machine.members()] == ["n1"]


def test_a_member_is_live_while_its_last_heartbeat_is_within_the_ttl(machine: StateMachine) -> None:
    for member in ("a", "b", "c"):
        machine.apply(Join(member_id=member, addr="local", voter=True, now=100.0))
    assert [m.member_id for m in machine.live_members(now=104.9, ttl=5.0)] == ["a", "b", "c"]
    machine.apply(Heartbeat(member_id="a", now=103.0))
    machine.apply(Heartbeat(member_id="b", now=106.0))
    machine.apply(Heartbeat(member_id="a", now=101.0))  # a proposer with a slower clock: seen stays
    assert [m.member_id for m in machine.live_members(now=107.0, ttl=5.0)] == ["a", "b"]
    assert [m.member_id for m in machine.live_members(now=108.0, ttl=5.0)] == ["b"]
    assert [m.member_id for m in machine.live_members(now=111.0, ttl=5.0)] == []
    assert [m.member_id for m in machine.members()] == ["a", "b", "c"]  # listed until removed
    machine.apply(Join(member_id="c", addr="local", voter=True, now=110.0))  # a restart rejoins
    assert [m.member_id for m in machine.live_members(now=110.5, ttl=5.0)] == ["b", "c"]


def test_ownership_over_the_live_members_moves_only_a_dead_members_partitions(machine: StateMachine) -> None:
    for member in ("a", "b", "c"):
        machine.apply(Join(member_id=member, addr="local", voter=True, now=100.0))
    before = assignment(m.member_id for m in machine.live_members(now=101.0, ttl=5.0))
    for member in ("a", "b"):  # c is silent
        machine.apply(Heartbeat(member_id=member, now=104.0))
    after = assignment(m.member_id for m in machine.live_members(now=106.0, ttl=5.0))
    assert len(after) == PARTITIONS and set(after.values()) == {"a", "b"}
    moved = {p for p in range(PARTITIONS) if before[p] != after[p]}
    assert moved == {p for p, owner in before.items() if owner == "c"}


def test_partition_leases_share_the_fencing_counter(machine: StateMachine) -> None:
    lock = machine.apply(AcquireLock(key="x", holder="a", ttl=10, now=0.0))
    lease = machine.apply(AcquirePartition(partition=3, holder="n1", ttl=10, now=0.0))
    assert (lock, lease) == (1, 2)
    assert machine.apply(AcquirePartition(partition=3, holder="n2", ttl=10, now=5.0)) is None
    assert machine.apply(AcquirePartition(partition=4, holder="n2", ttl=10, now=5.0)) == 3
    assert machine.apply(RenewPartition(partition=3, holder="n1", token=2, ttl=10, now=9.0)) is True
    assert machine.partition_lease(3, now=18.0) == LockInfo(holder="n1", token=2, expires=19.0)
    assert machine.apply(ReleasePartition(partition=3, holder="n2", token=2)) is False
    assert machine.apply(ReleasePartition(partition=3, holder="n1", token=2)) is True
    assert machine.partition_lease(3, now=18.0) is None
    assert machine.lock("3", now=0.0) is None  # partitions and locks are separate name spaces


def test_publish_appends_and_trims(machine: StateMachine) -> None:
    seqs = [machine.apply(Publish(topic="t", payload=b"%d" % i, now=float(i), keep=3)) for i in range(5)]
    assert seqs == [1, 2, 3, 4, 5]
    assert machine.last_seq("t") == 5
    kept = machine.messages("t")
    assert [(m.seq, m.payload, m.published) for m in kept] == [(3, b"2", 2.0), (4, b"3", 3.0), (5, b"4", 4.0)]
    assert [m.seq for m in machine.messages("t", after=3)] == [4, 5]
    assert [m.seq for m in machine.messages("t", after=0, limit=2)] == [3, 4]
    assert machine.messages("t", after=5) == []
    assert machine.messages("other") == [] and machine.last_seq("other") == 0
    assert len(machine.store.scan(b"q/")) == 3  # trimmed entries are gone from the store


def test_purge_drops_only_expired_values(machine: StateMachine) -> None:
    machine.apply(Set(key="a", value=b"1", now=0.0, ttl=1))
    machine.apply(Set(key="b", value=b"2", now=0.0, ttl=100))
    machine.apply(Set(key="c", value=b"3", now=0.0))
    assert machine.apply(Purge(now=50.0)) == 1
    assert [key for key, _ in machine.store.scan(b"k/")] == [b"k/b", b"k/c"]


def test_applied_counts_every_command_and_apply_bytes_decodes(machine: StateMachine) -> None:
    assert machine.applied == 0
    machine.apply(Set(key="a", value=b"1", now=0.0))
    assert machine.apply_bytes(encode_command(AcquireLock(key="l", holder="h", ttl=1, now=0.0))) == 1
    machine.apply(ReleaseLock(key="l", holder="nobody", token=1))  # no effect, still applied
    assert machine.applied == 3


def test_odd_values_are_applied_deterministically_not_raised(machine: StateMachine) -> None:
    assert machine.apply(AcquirePartition(partition=-5, holder="h", ttl=-1, now=0.0)) == 1
    assert machine.partition_lease(-5, now=0.0) is None  # negative ttl: already expired
    assert machine.apply(Publish(topic="t\0x", payload=b"", now=0.0, keep=0)) == 1
    assert machine.apply(Publish(topic="t\0x", payload=b"", now=0.0, keep=0)) == 2
    assert [m.seq for m in machine.messages("t\0x")] == [2]  # keep < 1 keeps one
