"""`Envelope`: the versioned wire form of a queue message for networked backends (msgpack).

Versions: what travels (the envelope and the payload inside it) has a format `major.minor`, written as
the envelope's `v` (the major; today's messages, `1`, omit it) and `minor` (omitted when 0). A minor
version only appends fields, with defaults, to the envelope or to a payload record, and an older reader
ignores fields it does not know (the envelope is a map; the engine's records are arrays whose extra trailing
elements msgspec skips), so it reads a message of any minor of its major. A newer major changes something
an older reader must not guess at: `unpack` raises `PoisonMessage` ("message format 2.x; this worker reads
1.x: upgrade it") and the backend dead-letters the message, its bytes intact, through its normal DLQ path.
The one thing every major keeps is that an envelope is a msgpack map with `v`.

The payload travels as `body`, encoded by the backend's `Codec`, so the envelope can be read (and
dead-lettered with a reason) even when the payload cannot.
"""

from __future__ import annotations

import msgspec

from .._errors import PoisonMessage

__all__ = ("ENVELOPE_MINOR", "ENVELOPE_VERSION", "Envelope", "check_major", "pack", "unpack")

ENVELOPE_VERSION = 1
"""The major version of the message format this worker writes and reads."""
ENVELOPE_MINOR = 1
"""The minor version of the message format this worker writes (it reads every minor).

1.1: a response record carries the fence of its download (`Response.fence`); an envelope, the attempts
of its message before its last replay from the DLQ (`prior_attempts`).
"""


class Envelope(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One message on the wire.

    Attributes:
        v: Major version of the message format (see the module docstring).
        id: Message id, stable across redeliveries, the DLQ and replay.
        topic: Topic the message belongs to.
        body: The payload, encoded by the backend's codec.
        key: Partition key, or `None`.
        priority: Lane (higher first).
        attempt: Delivery attempt this envelope stands for (1 on first publish).
        created: Epoch seconds of the first publish.
        reason: Why it was dead-lettered (DLQ entries only).
        failed_at: Epoch seconds when it was dead-lettered (DLQ entries only).
        minor: Minor version of the format of the node that wrote it (`pack` sets it).
        prior_attempts: Attempts used before its last replay from the DLQ (1.1; see `Fence`).

    Example:
        >>> env = Envelope(id="1", topic="fetch", body=b"x", created=1.0)
        >>> back = unpack(pack(env))
        >>> back.id, back.body, back.minor == ENVELOPE_MINOR
        ('1', b'x', True)
    """

    id: str
    topic: str
    body: bytes
    created: float
    v: int = ENVELOPE_VERSION
    key: str | None = None
    priority: int = 0
    attempt: int = 1
    reason: str | None = None
    failed_at: float | None = None
    minor: int = 0  # absent: 1.0; `pack` stamps this worker's
    prior_attempts: int = 0


class _Version(msgspec.Struct):
    """The one part of an envelope every major keeps: read when the whole cannot be."""

    v: int = ENVELOPE_VERSION
    minor: int = 0


_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(Envelope)
_VERSION = msgspec.msgpack.Decoder(_Version)


def check_major(major: int) -> None:
    """Raise `PoisonMessage` unless `major` is the major version of the format this worker reads.

    Example:
        >>> check_major(ENVELOPE_VERSION)
        >>> check_major(2)
        Traceback (most recent call last):
        ...
        mocra_core._errors.PoisonMessage: message format 2.x; this worker reads 1.x: upgrade it
    """
    if major == ENVELOPE_VERSION:
        return
    advice = "upgrade it" if major > ENVELOPE_VERSION else "it no longer reads that format"
    raise PoisonMessage(f"message format {major}.x; this worker reads {ENVELOPE_VERSION}.x: {advice}")


def pack(envelope: Envelope) -> bytes:
    """Encode an envelope, stamped with this worker's minor version."""
    if envelope.minor != ENVELOPE_MINOR:  # re-sent by this worker: its fields are this worker's
        envelope = msgspec.structs.replace(envelope, minor=ENVELOPE_MINOR)
    return _ENCODER.encode(envelope)


def unpack(data: bytes) -> Envelope:
    """Decode an envelope of this worker's major (any minor: unknown fields are ignored).

    Raises:
        PoisonMessage: the bytes are not an envelope, or one of another major (the reason says which).
    """
    try:
        envelope = _DECODER.decode(data)
    except msgspec.DecodeError as exc:
        try:
            major = _VERSION.decode(data).v
        except msgspec.DecodeError:
            major = ENVELOPE_VERSION
        check_major(major)  # another major may not fit this one's fields: say so rather than "undecodable"
        raise PoisonMessage(f"undecodable envelope ({len(data)} bytes): {exc}") from None
    check_major(envelope.v)
    return envelope
