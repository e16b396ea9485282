"""`EngineCodec`: bytes for the engine's queue payloads, for durable and remote queues."""

from __future__ import annotations

import msgspec

from ..http import Request, RequestRecord, Response, ResponseRecord
from ..modules import Task

__all__ = ("EngineCodec",)

_TASK, _REQUEST, _RESPONSE = b"t", b"q", b"r"


class EngineCodec:
    """Encodes `Task`, `Request` and `Response` payloads as a one-byte tag plus msgpack.

    Example:
        >>> codec = EngineCodec()
        >>> codec.decode(codec.encode(Request("https://example.com/")))
        <Request GET https://example.com/>
    """

    def __init__(self) -> None:
        self._encoder = msgspec.msgpack.Encoder()
        self._tasks = msgspec.msgpack.Decoder(Task)
        self._requests = msgspec.msgpack.Decoder(RequestRecord)
        self._responses = msgspec.msgpack.Decoder(ResponseRecord)

    def encode(self, payload: object) -> bytes:
        """Encode one payload; raises TypeError for anything but Task, Request and Response."""
        if isinstance(payload, Request):
            return _REQUEST + self._encoder.encode(payload.to_record())
        if isinstance(payload, Response):
            return _RESPONSE + self._encoder.encode(payload.to_record())
        if isinstance(payload, Task):
            return _TASK + self._encoder.encode(payload)
        raise TypeError(f"cannot encode {type(payload).__name__} for a queue")

    def decode(self, data: bytes) -> object:
        """Decode one payload; raises msgspec.DecodeError or ValueError for bytes it did not make."""
        tag, body = data[:1], data[1:]
        if tag == _REQUEST:
            return Request.from_record(self._requests.decode(body))
        if tag == _RESPONSE:
            return Response.from_record(self._responses.decode(body))
        if tag == _TASK:
            return self._tasks.decode(body)
        raise ValueError(f"unknown payload tag {tag!r}")
