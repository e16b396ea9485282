"""A request on the LMDB/Redis path: routing beside the request (what ships) vs the flat record it replaced.

Issue 16 moved the engine's routing fields (node, run, depth, account) out of `Request` into a `Routing`
published beside it (`Routed`). This measures the codec side of that change, on equal footing (a request
rebuilt from its record without `__init__` in every variant):

- `routed`: what ships — `EngineCodec` encodes `Routed(request, routing)` as `Q` + `[request record, routing]`
  and decodes it to a `Request` of the user's fields and a `Routing`;
- `flat`: the version before — one array-like record of the user's fields and the routing among them
  (`RoutedRecord`'s layout), rebuilt into one object of sixteen slots; its codec, `to_record` and
  `from_record` are the ones that shipped (the same dispatch as `EngineCodec`);
- `old bytes`: decoding a record the version before wrote (tag `q`) with today's codec, split into request
  and routing (what a job dir or a broker queue written by it costs per request on resume); decode only.

    uv run python benchmarks/bench_request_wire.py [--n 20000] [--rounds 21]

Rounds are interleaved; on a shared machine compare the minimums too (printed in brackets).
"""

from __future__ import annotations

import argparse
import operator
import statistics
import time
from typing import Any

import msgspec

from mocra_core.engine import EngineCodec
from mocra_core.http import Request, Routed, RoutedRecord, Routing

_FLAT = RoutedRecord.__struct_fields__
_FLAT_VALUES = operator.attrgetter(*_FLAT)


class _FlatRequest:
    """A request of the version before: the user's fields and the routing in one object (its slots)."""

    __slots__ = ("_fingerprint", *_FLAT)

    def to_record(self) -> RoutedRecord:
        return RoutedRecord(*_FLAT_VALUES(self))

    @classmethod
    def from_record(cls, record: RoutedRecord) -> _FlatRequest:
        request = object.__new__(cls)
        for name, value in zip(_FLAT, msgspec.structs.astuple(record), strict=True):
            setattr(request, name, value)
        request.headers = dict(record.headers)  # type: ignore[attr-defined]
        request.cookies = dict(record.cookies)  # type: ignore[attr-defined]
        request.meta = dict(record.meta)  # type: ignore[attr-defined]
        request._fingerprint = None  # type: ignore[attr-defined]
        return request


def _sample() -> Routed:
    request = Request(
        "http://127.0.0.1:8731/item/12345.html", meta={"page": 3, "from": "list"}, callback="parse_item"
    )
    return Routed(request, Routing("bench/spider", run="bench:-:1", depth=2))


def _flat_request(routed: Routed) -> _FlatRequest:
    flat = _FlatRequest()
    for name, value in msgspec.structs.asdict(RoutedRecord.join(routed.request, routed.routing)).items():
        setattr(flat, name, value)
    return flat


def _routed(codec: EngineCodec) -> Any:
    def roundtrip(routed: Routed) -> object:
        return codec.decode(codec.encode(routed))

    return roundtrip


class _FlatCodec:
    """`EngineCodec` of the version before, for requests: the same dispatch, the flat record."""

    def __init__(self) -> None:
        self._encoder = msgspec.msgpack.Encoder()
        self._requests = msgspec.msgpack.Decoder(RoutedRecord)

    def encode(self, payload: object) -> bytes:
        if isinstance(payload, _FlatRequest):
            return b"q" + self._encoder.encode(payload.to_record())
        raise TypeError(type(payload).__name__)

    def decode(self, data: bytes) -> object:
        tag, body = data[:1], data[1:]
        if tag == b"q":
            return _FlatRequest.from_record(self._requests.decode(body))
        raise ValueError(tag)


def _flat() -> Any:
    codec = _FlatCodec()

    def roundtrip(request: _FlatRequest) -> object:
        return codec.decode(codec.encode(request))

    return roundtrip


def _old_bytes(codec: EngineCodec, routed: Routed) -> Any:
    data = b"q" + msgspec.msgpack.encode(RoutedRecord.join(routed.request, routed.routing))

    def decode(_: object) -> object:
        return codec.decode(data)

    return decode


def main() -> None:
    """Print the median microseconds per encode+decode (decode only for `old bytes`), and the wire sizes."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=21)
    args = ap.parse_args()
    codec = EngineCodec()
    routed = _sample()
    variants = {
        "flat": (_flat(), _flat_request(routed)),
        "routed": (_routed(codec), routed),
        "old bytes": (_old_bytes(codec, routed), None),
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.rounds):  # interleaved
        for name, (run, payload) in variants.items():
            start = time.perf_counter()
            for _ in range(args.n):
                run(payload)
            times[name].append((time.perf_counter() - start) / args.n * 1e6)
    flat = statistics.median(times["flat"])
    for name, runs in times.items():
        median = statistics.median(runs)
        print(f"{name:9s} {median:5.2f} us ({min(runs):.2f}-{max(runs):.2f})  {median / flat:.3f}x flat")
    flat_bytes = 1 + len(msgspec.msgpack.encode(RoutedRecord.join(routed.request, routed.routing)))
    print(f"wire bytes: flat {flat_bytes}, routed {len(codec.encode(routed))}")


if __name__ == "__main__":
    main()
