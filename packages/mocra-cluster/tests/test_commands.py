"""Commands round-trip through msgpack, and the wire format evolves without breaking older readers."""

from __future__ import annotations

import msgspec
import pytest

from mocra_cluster import (
    AcquireLock,
    AcquirePartition,
    Command,
    CompareAndSet,
    Delete,
    Heartbeat,
    Join,
    Publish,
    Purge,
    ReleaseLock,
    ReleasePartition,
    Remove,
    RenewLock,
    RenewPartition,
    Set,
    decode_command,
    encode_command,
)

EVERY_COMMAND: list[Command] = [
    Set(key="a", value=b"\x00\xff", now=1.0, ttl=2.5),
    Delete(key="a", now=1.0),
    CompareAndSet(key="a", expected=None, value=b"v", now=1.0),
    AcquireLock(key="l", holder="h", ttl=3.0, now=1.0),
    RenewLock(key="l", holder="h", token=4, ttl=3.0, now=1.0),
    ReleaseLock(key="l", holder="h", token=4),
    Join(member_id="n1", addr="127.0.0.1:7000", voter=True, now=1.0),
    Remove(member_id="n1"),
    Heartbeat(member_id="n1", now=2.0),
    AcquirePartition(partition=7, holder="n1", ttl=5.0, now=1.0),
    RenewPartition(partition=7, holder="n1", token=9, ttl=5.0, now=1.0),
    ReleasePartition(partition=7, holder="n1", token=9),
    Publish(topic="t", payload=b"p", now=1.0, keep=5),
    Purge(now=3.0),
]


@pytest.mark.parametrize("command", EVERY_COMMAND, ids=lambda c: type(c).__name__)
def test_every_command_round_trips(command: Command) -> None:
    assert decode_command(encode_command(command)) == command


def test_tags_are_unique() -> None:
    tags = [type(command).__struct_config__.tag for command in EVERY_COMMAND]
    assert len(set(tags)) == len(tags)


def test_a_newer_field_is_ignored_by_this_reader() -> None:
    newer = msgspec.msgpack.encode({"op": "set", "key": "a", "value": b"1", "now": 1.0, "v": 2, "extra": 1})
    assert decode_command(newer) == Set(key="a", value=b"1", now=1.0, v=2)


def test_an_unknown_command_is_refused() -> None:
    with pytest.raises(msgspec.DecodeError, match="Invalid value 'nope'"):
        decode_command(msgspec.msgpack.encode({"op": "nope"}))


def test_a_missing_field_is_refused() -> None:
    with pytest.raises(msgspec.DecodeError, match="missing required field `now`"):
        decode_command(msgspec.msgpack.encode({"op": "set", "key": "a", "value": b"1"}))
