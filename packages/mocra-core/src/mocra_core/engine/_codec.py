"""`EngineCodec`: bytes for the engine's queue payloads, for durable and remote queues.

Versions (the format `major.minor` of `queue._envelope`, which LMDB queues have no envelope to carry): a
payload is a tag byte and msgpack. A minor version appends fields, with defaults, to a record (arrays: an
older reader skips the extra trailing elements; `Task` is a map: unknown keys are skipped) or to the pair
of a routed request. A payload of a later major starts with its major as one byte (2 to 31) before the
tag; this worker rejects it with `PoisonMessage` ("message format 2.x; this worker reads 1.x: upgrade
it") and the queue dead-letters it with that reason.

Minors: 1.1 appends `fence` (the claim of the download that made it) to the response record.
"""

from __future__ import annotations

import msgspec

from ..http import Request, RequestRecord, Response, ResponseRecord, Routed, RoutedRecord, Routing
from ..modules import Task
from ..queue._envelope import check_major

__all__ = ("EngineCodec",)

_TASK, _ROUTED, _RESPONSE = b"t", b"Q", b"R"
_FLAT_REQUEST, _FLAT_RESPONSE = b"q", b"r"  # written before the routing envelope; still read
_MAJORS = range(2, 32)  # a first byte in this range is the major of a later format, not a tag


class _RoutedPair(msgspec.Struct, array_like=True):
    """A routed request on the wire, `[request record, routing]`; elements a later minor adds are skipped."""

    request: RequestRecord
    routing: Routing


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
        self._routed = msgspec.msgpack.Decoder(_RoutedPair)
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
        """Decode one payload; raises msgspec.DecodeError or ValueError for bytes it did not make.

        Raises:
            PoisonMessage: the payload is of a later major version (the reason says so).
        """
        tag, body = data[:1], data[1:]
        if tag == _ROUTED:
            pair = self._routed.decode(body)
            return Routed(Request.from_record(pair.request), pair.routing)
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
        if tag and tag[0] in _MAJORS:
            check_major(tag[0])
        raise ValueError(f"unknown payload tag {tag!r}")
