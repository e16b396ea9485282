"""Work carries its generation: `Routing.generation` and `Task.generation`, readable by both layouts."""

from __future__ import annotations

from typing import Any

import msgspec

from mocra_core.engine import EngineCodec
from mocra_core.http import Request, Response, Routed, Routing
from mocra_core.modules import Task


class RoutingBefore(msgspec.Struct, frozen=True, array_like=True, omit_defaults=True):
    """`Routing` as versions before generations wrote it."""

    node: str | None = None
    run: str | None = None
    depth: int = 0
    account: str | None = None


class TaskBefore(msgspec.Struct, kw_only=True, omit_defaults=True):
    module: str
    node: str
    meta: dict[str, Any] = {}
    run: str | None = None
    account: str | None = None
    inputs: list[dict[str, Any]] = []
    v: int = 1


def test_a_request_and_a_response_carry_their_generation() -> None:
    codec = EngineCodec()
    routing = Routing("news/spider", "news:-:1", 2, None, generation=3)
    routed = codec.decode(codec.encode(Routed(Request("https://example.com/a"), routing)))
    assert isinstance(routed, Routed) and routed.routing == routing
    response = Response(
        "https://example.com/a", 200, [], b"", Request("https://example.com/a"), routing=routing
    )
    back = codec.decode(codec.encode(response))
    assert isinstance(back, Response) and back.routing.generation == 3
    assert routing.deeper().generation == 3


def test_routing_of_either_layout_reads_in_the_other() -> None:
    old = msgspec.msgpack.encode(RoutingBefore("news/spider", "r", 1, "alice"))
    assert msgspec.msgpack.decode(old, type=Routing) == Routing("news/spider", "r", 1, "alice", generation=0)
    new = msgspec.msgpack.encode(Routing("news/spider", "r", 1, "alice", generation=2))
    assert msgspec.msgpack.decode(new, type=RoutingBefore) == RoutingBefore("news/spider", "r", 1, "alice")
    # an array-like struct writes every field: the new layout is one element longer, which old readers skip
    assert len(msgspec.msgpack.decode(msgspec.msgpack.encode(Routing()))) == 5


def test_a_task_carries_its_generation_and_reads_in_the_old_layout() -> None:
    codec = EngineCodec()
    task = Task(module="news", node="spider", run="r", generation=4)
    assert codec.decode(codec.encode(task)) == task
    assert msgspec.msgpack.decode(msgspec.msgpack.encode(task), type=TaskBefore).module == "news"
    old = msgspec.msgpack.encode(TaskBefore(module="news", node="spider"))
    assert msgspec.msgpack.decode(old, type=Task).generation == 0
