"""`EngineCodec`: bytes for the engine's queue payloads, for durable and remote queues."""

from __future__ import annotations

import msgspec

from ..http import Request, RequestRecord, Response, ResponseRecord, Routed, RoutedRecord, Routing
from ..modules import Task

__all__ = ("EngineCodec",)

_TASK, _ROUTED, _RESPONSE = b"t", b"Q", b"R"
_FLAT_REQUEST, _FLAT_RESPONSE = b"q", b"r"  # written before the routing envelope; still read


class _FlatResponseRecord(msgspec.Struct, array_like=True):
    """A response record written before the routing envelope: its request flat, routing among its fields."""

    url: str
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    request: RoutedRecord
    elapsed: float = 0.0


class EngineCodec:
    """Encodes `Task`, `Routed` (a request beside its routing) and `Response` payloads: a tag byte, msgpack.

    A routed request is `[request record, routing]` (tag `Q`); a response record carries its routing.
    Records of earlier versions (tags `q` and `r`, the routing among the request's fields) are still read:
    a job dir or a broker's queue written by them resumes.

    Example:
        >>> codec = EngineCodec()
        >>> routed = Routed(Request("https://example.com/"), Routing("books/spider"))
        >>> routed = codec.decode(codec.encode(routed))
        >>> routed.request, routed.routing.node
        (<Request GET https://example.com/>, 'books/spider')
    """

    def __init__(self) -> None:
        self._encoder = msgspec.msgpack.Encoder()
        self._tasks = msgspec.msgpack.Decoder(Task)
        self._routed = msgspec.msgpack.Decoder(tuple[RequestRecord, Routing])
        self._responses = msgspec.msgpack.Decoder(ResponseRecord)
        self._flat_requests = msgspec.msgpack.Decoder(RoutedRecord)
        self._flat_responses = msgspec.msgpack.Decoder(_FlatResponseRecord)

    def encode(self, payload: object) -> bytes:
        """Encode one payload; raises TypeError for anything but Task, Routed and Response."""
        if isinstance(payload, Routed):
            return _ROUTED + self._encoder.encode((payload.request.to_record(), payload.routing))
        if isinstance(payload, Response):
            return _RESPONSE + self._encoder.encode(payload.to_record())
        if isinstance(payload, Task):
            return _TASK + self._encoder.encode(payload)
        if isinstance(payload, Request):
            raise TypeError("a Request is queued beside its routing: Routed(request, routing)")
        raise TypeError(f"cannot encode {type(payload).__name__} for a queue")

    def decode(self, data: bytes) -> object:
        """Decode one payload; raises msgspec.DecodeError or ValueError for bytes it did not make."""
        tag, body = data[:1], data[1:]
        if tag == _ROUTED:
            record, routing = self._routed.decode(body)
            return Routed(Request.from_record(record), routing)
        if tag == _RESPONSE:
            return Response.from_record(self._responses.decode(body))
        if tag == _TASK:
            return self._tasks.decode(body)
        if tag == _FLAT_REQUEST:
            return self._flat_requests.decode(body).split()
        if tag == _FLAT_RESPONSE:
            flat = self._flat_responses.decode(body)
            routed = flat.request.split()
            return Response(
                flat.url, flat.status, flat.headers, flat.body, routed.request, elapsed=flat.elapsed,
                routing=routed.routing,
            )  # fmt: skip
        raise ValueError(f"unknown payload tag {tag!r}")
