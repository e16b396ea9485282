"""`Codec`: how a durable or remote queue turns payloads into bytes and back; `MsgpackCodec`, the default.

`decode_problem` gives the reason a backend dead-letters a payload its codec rejected with.
"""

from __future__ import annotations

from typing import Any, Protocol

import msgspec

from .._errors import PoisonMessage

__all__ = ("Codec", "MsgpackCodec", "decode_problem")


class Codec(Protocol):
    """Turns queue payloads into bytes and back.

    `decode(encode(obj))` must equal `obj` (a copy is fine). `encode` raises (typically `TypeError`) for
    a payload it cannot represent, and the publish fails; `decode` raises (any `Exception`) for bytes it
    cannot read, and the backend dead-letters that message as a poison message instead of handing it out,
    with the exception's `reason` if it is a `PoisonMessage` (e.g. a payload of a newer major version).
    """

    def encode(self, obj: object, /) -> bytes:
        """Return the bytes of one payload."""
        ...

    def decode(self, data: bytes, /) -> object:
        """Return the payload `data` was made from."""
        ...


class MsgpackCodec:
    """A `Codec` using msgspec's msgpack, decoding to (and validating) `type`.

    Args:
        type: What payloads decode to: a `msgspec.Struct`, a tagged union of Structs, or any type msgspec
            understands. The default, `Any`, decodes to plain Python values (dict, list, str, ...).

    Example:
        >>> import msgspec
        >>> class Fetch(msgspec.Struct, tag="fetch"):
        ...     url: str
        >>> codec = MsgpackCodec(Fetch)
        >>> codec.decode(codec.encode(Fetch("https://example.com/")))
        Fetch(url='https://example.com/')
    """

    __slots__ = ("_decoder", "_encoder")

    def __init__(self, type: Any = Any) -> None:
        self._encoder = msgspec.msgpack.Encoder()
        self._decoder: msgspec.msgpack.Decoder[Any] = msgspec.msgpack.Decoder(type)

    def encode(self, obj: object, /) -> bytes:
        """Encode one payload; raises `TypeError` for objects msgpack cannot hold."""
        return self._encoder.encode(obj)

    def decode(self, data: bytes, /) -> object:
        """Decode one payload; raises `msgspec.DecodeError`/`ValidationError` for foreign bytes."""
        return self._decoder.decode(data)


def decode_problem(exc: Exception) -> str:
    """Why a payload `exc` rejected is dead-lettered: a `PoisonMessage`'s reason, else `undecodable payload`.

    Example:
        >>> decode_problem(PoisonMessage("message format 2.x; this worker reads 1.x: upgrade it"))
        'message format 2.x; this worker reads 1.x: upgrade it'
        >>> decode_problem(ValueError("unknown payload tag"))
        "undecodable payload: ValueError('unknown payload tag')"
    """
    return exc.reason if isinstance(exc, PoisonMessage) else f"undecodable payload: {exc!r}"
