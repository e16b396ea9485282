import msgspec
import pytest

from mocra_core import InvalidURL
from mocra_core.engine import EngineCodec
from mocra_core.http import Request, RequestRecord, Routed, RoutedRecord, Routing


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://example.com/s", "https://example.com/s?q=a+b&page=2"),
        ("https://example.com/s?x=1", "https://example.com/s?x=1&q=a+b&page=2"),
        ("https://example.com/s?", "https://example.com/s?q=a+b&page=2"),
        ("https://example.com/s#frag", "https://example.com/s?q=a+b&page=2#frag"),
        ("https://example.com/s#a?b", "https://example.com/s?q=a+b&page=2#a?b"),
    ],
)
def test_params_go_into_the_query_before_the_fragment(url: str, expected: str) -> None:
    assert Request(url, params={"q": "a b", "page": 2}).url == expected


def test_replace_with_a_new_payload_drops_the_old_body() -> None:
    form = Request("https://example.com/api", method="POST", form={"a": "1"}, headers={"X-Key": "k"})
    as_json = form.replace(json={"a": 1})
    assert as_json.body == b'{"a":1}'
    assert as_json.headers == {"X-Key": "k", "Content-Type": "application/json"}
    assert form.replace(priority=3).body == b"a=1"


def test_invalid_urls() -> None:
    for url in ("ftp://example.com/", "https:///nohost", "https://example.com/a b", "/relative"):
        with pytest.raises(InvalidURL):
            Request(url)


def _every_field_set() -> Request:
    return Request(
        "https://example.com/a", method="POST", headers={"X-A": "1"}, cookies={"c": "2"}, body=b"x",
        meta={"m": [1, 2]}, priority=3, timeout=4.5, dont_filter=True, max_retries=6, callback="parse_b",
        downloader="slow",
    )  # fmt: skip


def test_the_record_fields_are_the_one_list_of_a_request_fields() -> None:
    import inspect

    fields = set(RequestRecord.__struct_fields__)
    assert set(Request.__slots__) == fields | {"_fingerprint"}
    assert fields - {"url"} <= set(inspect.signature(Request).parameters)
    request = _every_field_set()
    record = request.to_record()
    assert record == RequestRecord(**{name: getattr(request, name) for name in fields})
    assert all(getattr(record, name) != getattr(RequestRecord(url="u"), name) for name in fields)


def test_a_request_holds_only_what_the_user_set() -> None:
    import inspect

    routing = set(Routing.__struct_fields__)
    assert routing == {"node", "run", "depth", "account", "generation"}
    assert not routing & (set(Request.__slots__) | set(inspect.signature(Request).parameters))


def test_the_flat_record_holds_every_request_field_and_the_routing() -> None:
    flat = RoutedRecord.__struct_fields__
    assert set(flat) == set(RequestRecord.__struct_fields__) | set(Routing.__struct_fields__)
    old = ("url", "method", "headers", "cookies", "body", "meta", "priority", "timeout", "dont_filter",
           "max_retries", "callback", "node", "downloader", "depth", "run", "account")  # fmt: skip
    assert flat[: len(old)] == old  # the layout earlier versions wrote: fields are only ever appended
    request, routing = _every_field_set(), Routing("shop/pages", "shop:alice:1", 7, "alice", 2)
    back = RoutedRecord.join(request, routing).split()
    assert (back.request.to_record(), back.routing) == (request.to_record(), routing)


def test_a_request_comes_back_from_its_record_with_every_field_and_dicts_of_its_own() -> None:
    request = _every_field_set()
    wire = msgspec.msgpack.decode(msgspec.msgpack.encode(request.to_record()), type=RequestRecord)
    for record in (request.to_record(), wire):
        copy = Request.from_record(record)
        assert copy.to_record() == request.to_record()
        assert copy.fingerprint == request.fingerprint
        copy.meta["new"] = copy.headers["new"] = copy.cookies["new"] = "x"
        assert "new" not in request.meta and "new" not in request.headers and "new" not in request.cookies
    assert request.replace(priority=8).to_record() == msgspec.structs.replace(request.to_record(), priority=8)


def test_request_bytes_written_by_an_older_version_are_read() -> None:
    # EngineCodec's bytes of Request("https://example.com/a", meta={"p": 1}, node="shop/pages", depth=2),
    # as written to a job dir by b211278 (before `Request` was rebuilt from its record without __init__)
    old = bytes.fromhex(
        "71dc0010b568747470733a2f2f6578616d706c652e636f6d2f61a34745548080c081a1700100c0c2c0c0aa73686f702f70"
        "61676573c002c0c0"
    )
    routed = EngineCodec().decode(old)
    assert isinstance(routed, Routed)
    request = routed.request
    got = (request.url, request.method, request.meta, routed.routing)
    assert got == ("https://example.com/a", "GET", {"p": 1}, Routing("shop/pages", depth=2))
