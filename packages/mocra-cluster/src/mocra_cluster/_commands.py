"""The commands of the replicated state machine: a msgpack-encoded, tagged union of frozen Structs.

A command carries everything `StateMachine.apply` needs, including the time: every time-dependent
command has `now` (wall-clock seconds chosen by the proposer), so replaying the same commands gives the
same state on every node. Fields are only ever appended with defaults (schema evolution); `v` is the
command schema version. Commands are plain data and are not validated when built or decoded: the
machine handles any value deterministically, and the control planes check their arguments
(`_checks.py`) before proposing.

Example:
    >>> raw = encode_command(Set(key="a", value=b"1", now=10.0))
    >>> decode_command(raw)
    Set(key='a', value=b'1', now=10.0, ttl=None, v=1)
"""

from __future__ import annotations

from typing import TypeAlias

import msgspec

__all__ = (
    "AcquireLock",
    "AcquirePartition",
    "AddIfAbsent",
    "Append",
    "Command",
    "CompareAndSet",
    "Delete",
    "Heartbeat",
    "Incr",
    "Join",
    "Publish",
    "Purge",
    "ReleaseLock",
    "ReleasePartition",
    "Remove",
    "RenewLock",
    "RenewPartition",
    "Set",
    "decode_command",
    "encode_command",
)

DEFAULT_KEEP = 1000
"""How many messages a topic keeps unless `Publish.keep` says otherwise."""


class _Command(msgspec.Struct, frozen=True, kw_only=True, tag_field="op"):
    """Base of every command; `v` is the schema version of the command."""


class Set(_Command, tag="set", frozen=True):
    """Store `value` under `key`; it expires at `now + ttl` if `ttl` is given."""

    key: str
    value: bytes
    now: float
    ttl: float | None = None
    v: int = 1


class Delete(_Command, tag="del", frozen=True):
    """Remove `key`; the result says whether a live value was removed."""

    key: str
    now: float
    v: int = 1


class CompareAndSet(_Command, tag="cas", frozen=True):
    """Replace `key` by `value` (None deletes) if its live value equals `expected` (None: absent)."""

    key: str
    expected: bytes | None
    value: bytes | None
    now: float
    ttl: float | None = None
    v: int = 1


class AcquireLock(_Command, tag="lock", frozen=True):
    """Take lock `key` for `holder` until `now + ttl`; the result is a new fencing token or None."""

    key: str
    holder: str
    ttl: float
    now: float
    v: int = 1


class RenewLock(_Command, tag="renew", frozen=True):
    """Extend lock `key` to `now + ttl` if its latest grant is `(holder, token)`."""

    key: str
    holder: str
    token: int
    ttl: float
    now: float
    v: int = 1


class ReleaseLock(_Command, tag="unlock", frozen=True):
    """Free lock `key` if its latest grant is `(holder, token)`."""

    key: str
    holder: str
    token: int
    v: int = 1


class Join(_Command, tag="join", frozen=True):
    """Add member `member_id` at `addr` (or update its address and vote); `now` marks it as seen."""

    member_id: str
    addr: str
    voter: bool
    now: float
    v: int = 1


class Remove(_Command, tag="remove", frozen=True):
    """Remove member `member_id`."""

    member_id: str
    v: int = 1


class Heartbeat(_Command, tag="beat", frozen=True):
    """Mark member `member_id` as seen at `now`."""

    member_id: str
    now: float
    v: int = 1


class AcquirePartition(_Command, tag="plock", frozen=True):
    """Take the lease of `partition` for `holder` until `now + ttl`; result: a fencing token or None."""

    partition: int
    holder: str
    ttl: float
    now: float
    v: int = 1


class RenewPartition(_Command, tag="prenew", frozen=True):
    """Extend the lease of `partition` to `now + ttl` if its latest grant is `(holder, token)`."""

    partition: int
    holder: str
    token: int
    ttl: float
    now: float
    v: int = 1


class ReleasePartition(_Command, tag="punlock", frozen=True):
    """Free the lease of `partition` if its latest grant is `(holder, token)`."""

    partition: int
    holder: str
    token: int
    v: int = 1


class Publish(_Command, tag="pub", frozen=True):
    """Append `payload` to the log of `topic`, keeping its last `keep` messages; result: the sequence."""

    topic: str
    payload: bytes
    now: float
    keep: int = DEFAULT_KEEP
    v: int = 1


class Purge(_Command, tag="purge", frozen=True):
    """Drop the values that expired by `now` (housekeeping; reads already ignore them)."""

    now: float
    v: int = 1


class Incr(_Command, tag="incr", frozen=True):
    """Add `delta` to the counter `key` (missing or expired: 0), keeping its expiry.

    A counter is a value holding a base-10 ASCII integer (no sign `+`, spaces or leading zeros) in the
    signed 64-bit range. Result: the new value, or None (nothing changed) if `key` holds a list, a value
    that is not a counter, or the sum leaves the 64-bit range.
    """

    key: str
    delta: int
    now: float
    v: int = 1


class Append(_Command, tag="append", frozen=True):
    """Append `value` to the list `key` (created if missing); result: its new length.

    A key holds a value or a list: the result is None (nothing changed) if `key` holds a live value.
    A list never expires; `Set` replaces it and `Delete` removes it.
    """

    key: str
    value: bytes
    now: float
    v: int = 1


class AddIfAbsent(_Command, tag="addnew", frozen=True):
    """Add `members` to the set `key` (a name space of its own); result: a bit mask of the new ones.

    Bit `i` of the result is set if `members[i]` was absent and is now added (so only the first of
    duplicates inside the batch). One command per batch: a control plane records a whole batch of
    request fingerprints in one log entry. Sets never expire.
    """

    key: str
    members: list[bytes]
    v: int = 1


Command: TypeAlias = (
    Set
    | Delete
    | CompareAndSet
    | AcquireLock
    | RenewLock
    | ReleaseLock
    | Join
    | Remove
    | Heartbeat
    | AcquirePartition
    | RenewPartition
    | ReleasePartition
    | Publish
    | Purge
    | Incr
    | Append
    | AddIfAbsent
)
"""Every command the state machine applies."""

_encoder = msgspec.msgpack.Encoder()
_decoder: msgspec.msgpack.Decoder[Command] = msgspec.msgpack.Decoder(Command)


def encode_command(command: Command) -> bytes:
    r"""Encode `command` as msgpack (a map with its tag under `op`).

    Example:
        >>> encode_command(Remove(member_id="b"))[:4]
        b'\x83\xa2op'
    """
    return _encoder.encode(command)


def decode_command(data: bytes) -> Command:
    """Decode a command encoded by `encode_command`.

    Raises:
        msgspec.DecodeError: `data` is not a command (or one from a newer, unknown kind).

    Example:
        >>> decode_command(encode_command(Heartbeat(member_id="a", now=1.5)))
        Heartbeat(member_id='a', now=1.5, v=1)
    """
    return _decoder.decode(data)
