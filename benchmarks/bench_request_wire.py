"""A request on the LMDB/Redis path: today's flat record vs routing in an envelope beside the request.

Issue 16 asked whether the engine's routing fields (node, run, depth, account) should leave `Request` for an
envelope published beside it. This measures the codec side of that choice, both variants on equal footing
(a request rebuilt from its record without `__init__`, as `Request.from_record` does):

- `flat`: what ships — `EngineCodec` encodes `Request.to_record()` (one array-like msgpack record);
- `envelope`: a prototype — `Envelope(request=<user fields>, route=Route(node, run, depth, account))`,
  decoded to a `Request` of the user's fields plus a `Route`.

    uv run python benchmarks/bench_request_wire.py [--n 50000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import operator
import statistics
import time
from typing import Any

import msgspec

from mocra_core.engine import EngineCodec
from mocra_core.http import Request, RequestRecord

_ROUTE = ("node", "depth", "run", "account")


def _user_field(field: msgspec.structs.FieldInfo) -> tuple[Any, ...]:
    if field.default is not msgspec.NODEFAULT:
        return (field.name, field.type, field.default)
    if field.default_factory is not msgspec.NODEFAULT:
        return (field.name, field.type, msgspec.field(default_factory=field.default_factory))
    return (field.name, field.type)


# what the user set on a request (the envelope variant's request): RequestRecord's fields but the route's
UserRecord = msgspec.defstruct(
    "UserRecord",
    [_user_field(f) for f in msgspec.structs.fields(RequestRecord) if f.name not in _ROUTE],
    array_like=True,
    omit_defaults=True,
)


class Route(msgspec.Struct, array_like=True, omit_defaults=True, frozen=True):
    """Where a request belongs in the crawl (the envelope variant's routing)."""

    node: str | None = None
    depth: int = 0
    run: str | None = None
    account: str | None = None


class Envelope(msgspec.Struct, array_like=True):
    """A queued request: the user's request and its route beside it."""

    request: UserRecord
    route: Route


_USER = tuple(f.name for f in msgspec.structs.fields(UserRecord))
_USER_VALUES = operator.attrgetter(*_USER)
_ROUTE_VALUES = operator.attrgetter(*_ROUTE)


def _sample() -> Request:
    return Request(
        "http://127.0.0.1:8731/item/12345.html", meta={"page": 3, "from": "list"}, callback="parse_item",
        node="bench/spider", run="bench:-:1", depth=2,
    )  # fmt: skip


def _flat(codec: EngineCodec) -> Any:
    def roundtrip(request: Request) -> object:
        return codec.decode(codec.encode(request))

    return roundtrip


def _envelope() -> Any:
    encoder, decoder = msgspec.msgpack.Encoder(), msgspec.msgpack.Decoder(Envelope)

    def roundtrip(request: Request) -> tuple[Request, Route]:
        data = b"e" + encoder.encode(
            Envelope(UserRecord(*_USER_VALUES(request)), Route(*_ROUTE_VALUES(request)))
        )
        decoded = decoder.decode(data[1:])
        user = object.__new__(Request)
        for name, value in zip(_USER, msgspec.structs.astuple(decoded.request), strict=True):
            setattr(user, name, value)
        # the routing slots stay unset: a Request of the envelope variant would not have them
        user.headers, user.cookies, user.meta = dict(user.headers), dict(user.cookies), dict(user.meta)
        user._fingerprint = None
        return user, decoded.route

    return roundtrip


def main() -> None:
    """Print the median microseconds per encode+decode of each variant, and the wire sizes."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=50_000)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    codec = EngineCodec()
    variants = {"flat": _flat(codec), "envelope": _envelope()}
    request = _sample()
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.rounds):  # interleaved
        for name, roundtrip in variants.items():
            start = time.perf_counter()
            for _ in range(args.n):
                roundtrip(request)
            times[name].append((time.perf_counter() - start) / args.n * 1e6)
    flat = statistics.median(times["flat"])
    for name, runs in times.items():
        median = statistics.median(runs)
        print(f"{name:9s} {median:5.2f} us ({min(runs):.2f}-{max(runs):.2f})  {median / flat:.3f}x flat")
    envelope = Envelope(UserRecord(*_USER_VALUES(request)), Route(*_ROUTE_VALUES(request)))
    flat_bytes, envelope_bytes = len(codec.encode(request)), 1 + len(msgspec.msgpack.encode(envelope))
    print(f"wire bytes: flat {flat_bytes}, envelope {envelope_bytes}")


if __name__ == "__main__":
    main()
