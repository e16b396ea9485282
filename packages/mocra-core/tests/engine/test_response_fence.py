"""A queued response carries the fence of its download (format 1.1), readable by 1.0 readers and from 1.0."""

from __future__ import annotations

import msgspec

from mocra_core.engine import EngineCodec
from mocra_core.http import Request, RequestRecord, Response, Routing
from mocra_core.queue import Fence


class ResponseRecord10(msgspec.Struct, array_like=True, omit_defaults=True):
    """The response record of format 1.0 (before `fence`), as its readers and writers saw it."""

    url: str
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    request: RequestRecord
    elapsed: float = 0.0
    routing: Routing | None = None


ROUTING = Routing("books/spider", "books:-:1", 2)


def response(fence: Fence | None) -> Response:
    url = "https://example.com/a"
    return Response(
        url, 200, [("a", "b")], b"<p>x</p>", Request(url), elapsed=0.5, routing=ROUTING, fence=fence
    )


def test_a_queued_response_keeps_the_fence_of_its_download() -> None:
    codec = EngineCodec()
    back = codec.decode(codec.encode(response(Fence("request/7", 3))))
    assert isinstance(back, Response)
    assert back.fence == Fence("request/7", 3)
    assert back.routing == ROUTING and back.body == b"<p>x</p>"


def test_a_1_0_reader_reads_a_1_1_response_and_a_1_1_reader_a_1_0_one() -> None:
    codec = EngineCodec()
    data = codec.encode(response(Fence("request/7", 3)))
    old = msgspec.msgpack.decode(data[1:], type=ResponseRecord10)  # the extra trailing element is skipped
    assert old.url == "https://example.com/a" and old.routing == ROUTING
    back = codec.decode(b"R" + msgspec.msgpack.encode(old))
    assert isinstance(back, Response) and back.fence is None and back.routing == ROUTING
