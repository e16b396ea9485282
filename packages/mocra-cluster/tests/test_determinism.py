"""The state machine is deterministic: equal command sequences give equal snapshots, snapshots included."""

from __future__ import annotations

import pathlib
import random

import pytest

from mocra_cluster import (
    AcquireLock,
    AcquirePartition,
    Command,
    CompareAndSet,
    Delete,
    Heartbeat,
    Join,
    LmdbStateStore,
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
    decode_command,
    encode_command,
)

KEYS = ["a", "b", "c"]
HOLDERS = ["h1", "h2", "h3"]
VALUES = [None, b"", b"1", b"2"]


def random_command(rng: random.Random, now: float) -> Command:
    key, holder = rng.choice(KEYS), rng.choice(HOLDERS)
    token, ttl = rng.randint(0, 30), rng.choice([0.5, 1.0, 5.0])
    match rng.randrange(14):
        case 0:
            return Set(key=key, value=rng.choice([b"1", b"2"]), now=now, ttl=rng.choice([None, ttl]))
        case 1:
            return Delete(key=key, now=now)
        case 2:
            return CompareAndSet(key=key, expected=rng.choice(VALUES), value=rng.choice(VALUES), now=now)
        case 3:
            return AcquireLock(key=key, holder=holder, ttl=ttl, now=now)
        case 4:
            return RenewLock(key=key, holder=holder, token=token, ttl=ttl, now=now)
        case 5:
            return ReleaseLock(key=key, holder=holder, token=token)
        case 6:
            return Join(member_id=holder, addr=f"h:{rng.randint(1, 3)}", voter=rng.random() < 0.5, now=now)
        case 7:
            return Remove(member_id=holder)
        case 8:
            return Heartbeat(member_id=holder, now=now)
        case 9:
            return AcquirePartition(partition=rng.randrange(4), holder=holder, ttl=ttl, now=now)
        case 10:
            return RenewPartition(partition=rng.randrange(4), holder=holder, token=token, ttl=ttl, now=now)
        case 11:
            return ReleasePartition(partition=rng.randrange(4), holder=holder, token=token)
        case 12:
            return Publish(topic=key, payload=b"%d" % rng.randrange(99), now=now, keep=rng.randint(1, 4))
        case _:
            return Purge(now=now)


def random_commands(seed: int, count: int) -> list[Command]:
    rng = random.Random(seed)
    now, commands = 1_000.0, []
    for _ in range(count):
        now += rng.choice([0.0, 0.1, 0.7, 2.0])
        commands.append(random_command(rng, now))
    return commands


def test_two_machines_with_a_snapshot_restore_midway_end_identical() -> None:
    commands = random_commands(seed=7, count=400)
    straight = StateMachine(MemoryStateStore())
    results_straight = [straight.apply(command) for command in commands]

    first = StateMachine(MemoryStateStore())
    results = [first.apply(command) for command in commands[:150]]
    restored_store = MemoryStateStore()
    restored_store.restore(first.store.snapshot())
    second = StateMachine(restored_store)  # as a Raft follower installing the leader's snapshot
    results += [second.apply_bytes(encode_command(command)) for command in commands[150:]]

    assert results == results_straight
    assert second.store.snapshot() == straight.store.snapshot()
    assert second.applied == straight.applied == 400
    assert any(isinstance(r, int) and not isinstance(r, bool) for r in results)  # tokens were handed out


@pytest.mark.parametrize("seed", range(25))
def test_random_sequences_replay_identically(seed: int) -> None:
    commands = random_commands(seed, count=120)
    wire = [encode_command(command) for command in commands]
    assert [decode_command(raw) for raw in wire] == commands
    cut = random.Random(seed).randrange(len(commands))
    one, two = StateMachine(MemoryStateStore()), StateMachine(MemoryStateStore())
    for raw in wire[:cut]:
        one.apply_bytes(raw)
        two.apply_bytes(raw)
    three = StateMachine(MemoryStateStore())
    three.store.restore(two.store.snapshot())
    for raw in wire[cut:]:
        one.apply_bytes(raw)
        three.apply_bytes(raw)
    assert one.store.snapshot() == three.store.snapshot()


@pytest.mark.parametrize("seed", range(10))
def test_fencing_tokens_are_strictly_increasing_and_unique(seed: int) -> None:
    machine = StateMachine(MemoryStateStore())
    granted = []
    for command in random_commands(seed, count=300):
        result = machine.apply(command)
        if isinstance(command, AcquireLock | AcquirePartition) and result is not None:
            granted.append(result)
    assert granted == sorted(set(granted))
    assert machine.fence == (granted[-1] if granted else 0)


def test_acquire_succeeds_exactly_when_no_other_holder_is_live() -> None:
    machine = StateMachine(MemoryStateStore())
    outcomes = set()
    for command in random_commands(seed=99, count=2_000):
        if not isinstance(command, AcquireLock):
            machine.apply(command)
            continue
        before = machine.lock(command.key, now=command.now)
        token = machine.apply(command)
        free = before is None or before.holder == command.holder
        assert (token is not None) == free
        outcomes.add(free)
        if token is not None:
            assert machine.lock(command.key, now=command.now) is not None
    assert outcomes == {True, False}  # both cases were exercised


def test_memory_and_lmdb_stores_reach_the_same_bytes(tmp_path: pathlib.Path) -> None:
    commands = random_commands(seed=3, count=300)
    memory = StateMachine(MemoryStateStore())
    store = LmdbStateStore(tmp_path, sync=False)
    try:
        lmdb_machine = StateMachine(store)
        assert [memory.apply(c) for c in commands] == [lmdb_machine.apply(c) for c in commands]
        assert store.snapshot() == memory.store.snapshot()
    finally:
        store.close()
