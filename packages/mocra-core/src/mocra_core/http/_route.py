"""`Routing`: where a request belongs in the crawl, carried beside it (`Routed`), never inside it."""

from __future__ import annotations

from typing import Any

import msgspec

from ._request import Request, RequestRecord

__all__ = ("NO_ROUTING", "Routed", "RoutedRecord", "Routing")


class Routing(msgspec.Struct, frozen=True, array_like=True, omit_defaults=True):
    """Where a request belongs in the crawl: set by the engine, read-only for spiders.

    A `Request` holds only what the user set; its routing travels beside it (`Routed`) through the
    request queue, and the download stage puts it on the response (`Response.routing`). It is frozen, so
    the follow-ups of one response share one `Routing` (`deeper` makes it once per response).

    Attributes:
        node: The module node that owns the request, `module/node`.
        run: Id of the module run it belongs to.
        depth: Number of follow hops from a seed.
        account: Account whose session (login, cookies) it uses.
        generation: The generation of its module that made it (`mocra_core.generations`); 0 unknown (made
            before generations: any generation of the module runs it). Appended with a default: readers
            of the earlier layout ignore it.

    Example:
        >>> seed = Routing("books/spider", run="books:-:1", generation=2)
        >>> seed.deeper()
        Routing(node='books/spider', run='books:-:1', depth=1, account=None, generation=2)
    """

    node: str | None = None
    run: str | None = None
    depth: int = 0
    account: str | None = None
    generation: int = 0

    def deeper(self) -> Routing:
        """The routing of a follow-up: the same node, run, account and generation, one hop deeper."""
        return Routing(self.node, self.run, self.depth + 1, self.account, self.generation)


NO_ROUTING = Routing()  # a response made outside the engine (tests, doctests) belongs nowhere


class Routed(msgspec.Struct, frozen=True, gc=False):
    """A request and its routing, as the request queue carries them.

    Not tracked by the garbage collector (it holds no cycle): a queue of a million costs 32 bytes and
    no collector time each.
    """

    request: Request
    routing: Routing


class RoutedRecord(msgspec.Struct, array_like=True, omit_defaults=True):
    """A request and its routing in one flat record: the request record of earlier versions; `Task.origin`.

    Its first sixteen fields are in the order versions before the routing envelope wrote them (routing
    fields among the request's); a field added to `RequestRecord` is appended here too, with its default
    (a test checks).
    """

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
    generation: int = 0

    @classmethod
    def join(cls, request: Request, routing: Routing) -> RoutedRecord:
        """The flat record of `request` and its `routing` (it shares the request's dicts)."""
        values = {name: getattr(request, name) for name in _REQUEST_FIELDS}
        return cls(
            **values, node=routing.node, run=routing.run, depth=routing.depth, account=routing.account,
            generation=routing.generation,
        )  # fmt: skip

    def split(self) -> Routed:
        """The request and its routing (the request has dicts of its own)."""
        record = RequestRecord(*[getattr(self, name) for name in _REQUEST_FIELDS])
        routing = Routing(self.node, self.run, self.depth, self.account, self.generation)
        return Routed(Request.from_record(record), routing)


_REQUEST_FIELDS = RequestRecord.__struct_fields__
