"""Counters, lists and sets: the machine's commands (deterministic) and the planes' calls over them."""

from __future__ import annotations

import pathlib
import random
import socket
from collections.abc import AsyncIterator

import anyio
import pytest

from mocra_cluster import (
    AddIfAbsent,
    Append,
    ClusterConfig,
    Command,
    CompareAndSet,
    ControlPlane,
    Delete,
    Incr,
    LmdbStateStore,
    LocalControlPlane,
    MemoryStateStore,
    RaftControlPlane,
    Refused,
    Set,
    StateMachine,
    StateStore,
    decode_command,
    encode_command,
)


class FakeClock:
    def __init__(self, now: float = 1_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["memory", "lmdb"])
def machine(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> StateMachine:
    store: StateStore = MemoryStateStore() if request.param == "memory" else LmdbStateStore(tmp_path)
    return StateMachine(store)


def test_the_new_commands_round_trip() -> None:
    for command in (
        Incr(key="n", delta=-3, now=1.0),
        Append(key="l", value=b"\x00", now=1.0),
        AddIfAbsent(key="s", members=[b"a", b""]),
    ):
        assert decode_command(encode_command(command)) == command


def test_counters(machine: StateMachine) -> None:
    assert machine.apply(Incr(key="n", delta=1, now=1.0)) == 1
    assert machine.apply(Incr(key="n", delta=-5, now=1.0)) == -4
    assert machine.get("n", now=1.0) == b"-4"
    machine.apply(Set(key="w", value=b"5", ttl=10, now=1.0))
    assert machine.apply(Incr(key="w", delta=1, now=5.0)) == 6  # keeps the expiry
    assert machine.get("w", now=11.0) is None
    assert machine.apply(Incr(key="w", delta=1, now=11.0)) == 1  # expired = missing, now never expires
    assert machine.get("w", now=1e9) == b"1"
    for bad in (b"x", b"01", b"+1", b" 1", b"", b"1_0", b"--1"):
        machine.apply(Set(key="bad", value=bad, now=1.0))
        assert machine.apply(Incr(key="bad", delta=1, now=1.0)) is None
        assert machine.get("bad", now=1.0) == bad
    machine.apply(Set(key="big", value=str(2**63 - 1).encode(), now=1.0))
    assert machine.apply(Incr(key="big", delta=1, now=1.0)) is None  # overflow: unchanged
    assert machine.apply(Incr(key="big", delta=-1, now=1.0)) == 2**63 - 2


def test_a_key_holds_a_value_or_a_list(machine: StateMachine) -> None:
    assert machine.apply(Append(key="l", value=b"a", now=1.0)) == 1
    assert machine.apply(Append(key="l", value=b"", now=1.0)) == 2
    assert machine.items("l", now=1.0) == [b"a", b""]
    assert machine.get("l", now=1.0) is None
    assert machine.apply(Incr(key="l", delta=1, now=1.0)) is None
    assert machine.apply(CompareAndSet(key="l", expected=None, value=b"x", now=1.0)) is False
    assert machine.items("l", now=1.0) == [b"a", b""]  # untouched

    machine.apply(Set(key="v", value=b"1", ttl=5, now=1.0))
    assert machine.apply(Append(key="v", value=b"x", now=1.0)) is None
    assert machine.items("v", now=1.0) is None  # holds a value
    assert machine.apply(Append(key="v", value=b"x", now=6.0)) == 1  # the value expired
    assert machine.get("v", now=6.0) is None

    machine.apply(Set(key="l", value=b"now a value", now=2.0))  # set replaces a list
    assert machine.get("l", now=2.0) == b"now a value"
    assert machine.apply(Delete(key="l", now=2.0)) is True
    assert machine.apply(Append(key="l", value=b"fresh", now=2.0)) == 1  # old elements gone
    assert machine.items("l", now=2.0) == [b"fresh"]
    assert machine.apply(Delete(key="l", now=2.0)) is True  # delete removes a list too
    assert machine.items("l", now=2.0) == []
    assert machine.apply(Delete(key="l", now=2.0)) is False


def test_lists_keep_order_past_one_byte_indexes(machine: StateMachine) -> None:
    values = [b"%d" % i for i in range(300)]  # msgpack indexes grow from 1 to 3 bytes: order holds
    for value in values:
        machine.apply(Append(key="log", value=value, now=1.0))
    assert machine.items("log", now=1.0) == values


def test_add_if_absent_answers_a_bit_mask(machine: StateMachine) -> None:
    assert machine.apply(AddIfAbsent(key="seen", members=[b"a", b"b", b"a", b""])) == 0b1011
    assert machine.apply(AddIfAbsent(key="seen", members=[b"b", b"c"])) == 0b10
    assert machine.apply(AddIfAbsent(key="other", members=[b"a"])) == 1  # sets are separate
    assert machine.apply(AddIfAbsent(key="seen", members=[])) == 0
    assert (machine.set_size("seen"), machine.set_size("other"), machine.set_size("none")) == (4, 1, 0)
    assert machine.set_contains("seen", b"") and not machine.set_contains("seen", b"d")
    machine.apply(Set(key="seen", value=b"v", now=1.0))  # values and sets do not share keys
    assert machine.set_contains("seen", b"a") and machine.get("seen", now=1.0) == b"v"


def random_command(rng: random.Random, now: float) -> Command:
    key = rng.choice(["a", "b"])
    match rng.randrange(6):
        case 0:
            return Set(key=key, value=rng.choice([b"1", b"x"]), ttl=rng.choice([None, 1.0]), now=now)
        case 1:
            return Delete(key=key, now=now)
        case 2:
            return CompareAndSet(key=key, expected=rng.choice([None, b"1"]), value=b"2", now=now)
        case 3:
            return Incr(key=key, delta=rng.randint(-3, 3), now=now)
        case 4:
            return Append(key=key, value=b"%d" % rng.randrange(9), now=now)
        case _:
            return AddIfAbsent(key=key, members=[b"%d" % rng.randrange(20) for _ in range(rng.randrange(5))])


@pytest.mark.parametrize("seed", range(10))
def test_replays_and_snapshots_agree(seed: int) -> None:
    rng = random.Random(seed)
    commands = [random_command(rng, 1_000.0 + i * 0.4) for i in range(300)]
    one, two = StateMachine(MemoryStateStore()), StateMachine(MemoryStateStore())
    cut = rng.randrange(len(commands))
    first = [one.apply(command) for command in commands]
    second = [two.apply_bytes(encode_command(command)) for command in commands[:cut]]
    three = StateMachine(MemoryStateStore())
    three.store.restore(two.store.snapshot())
    second += [three.apply_bytes(encode_command(command)) for command in commands[cut:]]
    assert first == second
    assert one.store.snapshot() == three.store.snapshot()


# ---------------------------------------------------------------------- the planes' calls


def free_addr() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture(params=["local", "raft"])
async def plane(
    request: pytest.FixtureRequest, tmp_path: pathlib.Path, anyio_backend: str
) -> AsyncIterator[ControlPlane]:
    clock = FakeClock()
    if request.param == "local":
        async with LocalControlPlane(tmp_path, clock=clock, sync=False) as local:
            yield local
        return
    config = ClusterConfig.bootstrap("solo", free_addr(), tmp_path / "raft", password="pw")
    async with RaftControlPlane(config, clock=clock) as raft:
        with anyio.fail_after(10):
            await raft.wait_ready()
        yield raft


@pytest.mark.anyio
async def test_plane_counters_lists_and_sets(plane: ControlPlane) -> None:
    assert await plane.incr("n") == 1
    assert await plane.incr("n", 41) == 42
    for bad in (b"x", b""):
        await plane.set("bad", bad)
        with pytest.raises(Refused, match="not a counter") as caught:
            await plane.incr("bad")
        assert caught.value.key == "bad"
    await plane.set("big", str(2**63 - 1).encode())
    with pytest.raises(Refused, match="overflow"):
        await plane.incr("big")
    with pytest.raises(ValueError, match="delta"):
        await plane.incr("n", 2**64)

    assert await plane.items("log") == []
    assert [await plane.append("log", b"%d" % i) for i in range(3)] == [1, 2, 3]
    assert await plane.items("log") == [b"0", b"1", b"2"]
    with pytest.raises(Refused, match="holds a list"):
        await plane.incr("log")
    with pytest.raises(Refused, match="holds a value"):
        await plane.append("n", b"x")
    with pytest.raises(Refused, match="holds a value"):
        await plane.items("n")

    assert await plane.add_if_absent("seen", [b"a", b"b", b"a"]) == [True, True, False]
    assert await plane.add_if_absent("seen", [b"c", b"b"]) == [True, False]
    assert await plane.add_if_absent("seen", []) == []
    assert await plane.set_size("seen") == 3
    assert await plane.set_contains("seen", b"c") and not await plane.set_contains("seen", b"z")
