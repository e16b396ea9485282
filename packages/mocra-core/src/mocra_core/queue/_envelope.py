"""`Envelope`: the versioned wire form of a queue message for networked backends (msgpack).

Rules (msgspec's schema evolution): fields are only ever appended, with defaults; readers ignore fields
they do not know, so an older node reads a newer minor version; `v` is bumped on a change a reader must
notice. The payload travels as `body`, encoded by the backend's `Codec`, so the envelope can be read (and
dead-lettered with a reason) even when the payload cannot.
"""

from __future__ import annotations

import msgspec

from .._errors import PoisonMessage

__all__ = ("ENVELOPE_VERSION", "Envelope", "pack", "unpack")

ENVELOPE_VERSION = 1


class Envelope(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One message on the wire.

    Attributes:
        v: Schema version of the envelope.
        id: Message id, stable across redeliveries, the DLQ and replay.
        topic: Topic the message belongs to.
        body: The payload, encoded by the backend's codec.
        key: Partition key, or `None`.
        priority: Lane (higher first).
        attempt: Delivery attempt this envelope stands for (1 on first publish).
        created: Epoch seconds of the first publish.
        reason: Why it was dead-lettered (DLQ entries only).
        failed_at: Epoch seconds when it was dead-lettered (DLQ entries only).

    Example:
        >>> env = Envelope(id="1", topic="fetch", body=b"x", created=1.0)
        >>> unpack(pack(env)) == env
        True
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


_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(Envelope)


def pack(envelope: Envelope) -> bytes:
    """Encode an envelope."""
    return _ENCODER.encode(envelope)


def unpack(data: bytes) -> Envelope:
    """Decode an envelope; extra fields from newer versions are ignored.

    Raises:
        PoisonMessage: the bytes are not an envelope (the reason says why).
    """
    try:
        return _DECODER.decode(data)
    except msgspec.DecodeError as exc:
        raise PoisonMessage(f"undecodable envelope ({len(data)} bytes): {exc}") from None
