"""EngineCodec: a request travels beside its routing; what earlier versions wrote (routing inside) is read."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from mocra_core.engine import EngineCodec
from mocra_core.http import Request, Response, Routed, Routing
from mocra_core.modules import Task


class OldRequestRecord(msgspec.Struct, array_like=True, omit_defaults=True):
    """The request record as versions before the routing envelope wrote it (routing among its fields)."""

    url: str
    method: str = "GET"
    headers: dict[str, str] = {}
    cookies: dict[str, str] = {}
    body: bytes | None = None
    meta: dict[str, Any] = {}
    priority: int = 0
    timeout: float | None = None
    dont_filter: bool = False
    max_retries: int | None = None
    callback: str | None = None
    node: str | None = None
    downloader: str | None = None
    depth: int = 0
    run: str | None = None
    account: str | None = None


class OldResponseRecord(msgspec.Struct, array_like=True, omit_defaults=True):
    url: str
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    request: OldRequestRecord
    elapsed: float = 0.0


class OldTask(msgspec.Struct, kw_only=True, omit_defaults=True):
    module: str
    node: str
    meta: dict[str, Any] = {}
    run: str | None = None
    account: str | None = None
    origin: OldRequestRecord | None = None
    inputs: list[dict[str, Any]] = []
    v: int = 1


OLD = OldRequestRecord(
    "https://example.com/a", method="POST", headers={"X-A": "1"}, cookies={"c": "2"}, body=b"x",
    meta={"m": 1}, priority=3, timeout=4.5, dont_filter=True, max_retries=6, callback="parse_b",
    node="shop/pages", downloader="slow", depth=7, run="shop:alice:1", account="alice",
)  # fmt: skip
OLD_ROUTING = Routing("shop/pages", "shop:alice:1", 7, "alice")


def _user_fields(request: Request) -> tuple[object, ...]:
    return msgspec.structs.astuple(request.to_record())


def _old_user_fields() -> tuple[object, ...]:
    return ("https://example.com/a", "POST", {"X-A": "1"}, {"c": "2"}, b"x", {"m": 1}, 3, 4.5, True, 6,
            "parse_b", "slow")  # fmt: skip


def test_a_routed_request_comes_back_with_its_routing() -> None:
    codec = EngineCodec()
    request = Request("https://example.com/a", meta={"p": 1}, callback="parse_b", downloader="slow")
    data = codec.encode(Routed(request, OLD_ROUTING))
    assert data[:1] == b"Q"
    back = codec.decode(data)
    assert isinstance(back, Routed)
    assert (_user_fields(back.request), back.routing) == (_user_fields(request), OLD_ROUTING)
    back.request.meta["new"] = 1
    assert "new" not in request.meta


def test_a_request_alone_is_not_queued() -> None:
    with pytest.raises(TypeError, match=r"Routed\(request, routing\)"):
        EngineCodec().encode(Request("https://example.com/"))


def test_a_request_written_by_an_earlier_version_is_split_into_request_and_routing() -> None:
    routed = EngineCodec().decode(b"q" + msgspec.msgpack.encode(OLD))
    assert isinstance(routed, Routed)
    assert (_user_fields(routed.request), routed.routing) == (_old_user_fields(), OLD_ROUTING)


def test_a_response_keeps_its_routing() -> None:
    codec = EngineCodec()
    request = Request("https://example.com/a", meta={"p": 1})
    response = Response(
        "https://example.com/b", 200, [("X", "1")], b"hi", request, elapsed=0.5, routing=OLD_ROUTING
    )
    data = codec.encode(response)
    assert data[:1] == b"R"
    back = codec.decode(data)
    assert isinstance(back, Response)
    assert (back.url, back.status, back.body, back.elapsed, back.routing) == (
        "https://example.com/b", 200, b"hi", 0.5, OLD_ROUTING
    )  # fmt: skip
    assert _user_fields(back.request) == _user_fields(request)
    bare = codec.decode(codec.encode(Response("https://example.com/", 200, [], b"", request)))
    assert isinstance(bare, Response)
    assert bare.routing == Routing()


def test_a_response_written_by_an_earlier_version_is_read_with_its_routing() -> None:
    old = OldResponseRecord("https://example.com/b", 200, [("X", "1")], b"hi", OLD, elapsed=0.5)
    response = EngineCodec().decode(b"r" + msgspec.msgpack.encode(old))
    assert isinstance(response, Response)
    assert (response.url, response.status, response.headers["x"], response.body, response.elapsed) == (
        "https://example.com/b", 200, "1", b"hi", 0.5
    )  # fmt: skip
    assert (_user_fields(response.request), response.routing) == (_old_user_fields(), OLD_ROUTING)


def test_a_task_written_by_an_earlier_version_keeps_its_origin() -> None:
    old = OldTask(module="shop", node="detail", run="shop:alice:1", account="alice", origin=OLD)
    task = EngineCodec().decode(b"t" + msgspec.msgpack.encode(old))
    assert isinstance(task, Task)
    assert task.origin is not None
    origin = task.origin.split()
    assert (_user_fields(origin.request), origin.routing) == (_old_user_fields(), OLD_ROUTING)
    again = EngineCodec().decode(EngineCodec().encode(task))
    assert again == task
