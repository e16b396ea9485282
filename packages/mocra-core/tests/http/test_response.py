import msgspec
import pytest

import mocra_core.http as http
from mocra_core.http import Node, Request, Response, ResponseRecord, Routing

URL = "https://example.com/shop/list/page.html"

PAGE = b"""<!doctype html>
<html><head><title> Shop </title></head>
<body>
  <ul class="items">
    <li class="item"><a href="../items/1.html">One</a> <span class="price">1.50</span></li>
    <li class="item"><a href="/items/2.html#reviews">Two</a> <span class="price">2.00</span></li>
    <li class="item"><a href="https://other.example.org/3">Three</a></li>
  </ul>
  <a href="//cdn.example.net/x.js">cdn</a>
  <a href="?page=2" class="next">next</a>
  <a href="javascript:void(0)">js</a> <a href="JavaScript:alert(1)">js</a>
  <a href="mailto:shop@example.com">mail</a> <a href="tel:+123">tel</a>
  <a href="data:text/html,hi">data</a> <a href="">empty</a> <a href="   ">blank</a>
  <a>none</a> <a href="#top">top</a>
  <a href="ftp://example.com/f">ftp</a>
  <a href="
     ../items/1.html  ">dup with whitespace</a>
  <img src="/img/a.png">
</body></html>"""


def response(body: bytes = PAGE, url: str = URL, headers: list[tuple[str, str]] | None = None) -> Response:
    return Response(url, 200, headers or [("Content-Type", "text/html; charset=utf-8")], body, Request(url))


def test_exports() -> None:
    assert http.__all__ == (
        "Node",
        "Request",
        "RequestRecord",
        "Response",
        "ResponseRecord",
        "Routed",
        "RoutedRecord",
        "Routing",
        "canonicalize_url",
        "fingerprint",
    )


def test_css_and_css_first() -> None:
    r = response()
    items = r.css("li.item")
    assert len(items) == 3
    assert all(isinstance(node, Node) for node in items)
    assert [node.css_first("a").attrs["href"] for node in items] == [  # type: ignore[union-attr]
        "../items/1.html",
        "/items/2.html#reviews",
        "https://other.example.org/3",
    ]
    assert [p.text(strip=True) for p in r.css("li.item .price")] == ["1.50", "2.00"]
    title = r.css_first("title")
    assert title is not None and title.text(strip=True) == "Shop"
    assert r.css_first("table") is None
    assert r.css("table") == []


def test_the_tree_is_parsed_once() -> None:
    r = response()
    r.css("a")
    tree = r._tree
    r.css_first("li")
    r.links()
    assert r._tree is tree is not None


def test_invalid_selector_is_a_value_error() -> None:
    with pytest.raises(ValueError, match=r"invalid CSS selector 'a\['"):
        response().css("a[")
    with pytest.raises(ValueError, match="invalid CSS selector"):
        response().css_first("")


def test_links_resolve_skip_and_deduplicate() -> None:
    assert response().links() == [
        "https://example.com/shop/items/1.html",
        "https://example.com/items/2.html",
        "https://other.example.org/3",
        "https://cdn.example.net/x.js",
        "https://example.com/shop/list/page.html?page=2",
    ]


def test_links_with_a_selector_and_another_attribute() -> None:
    r = response()
    assert r.links("a.next") == ["https://example.com/shop/list/page.html?page=2"]
    assert r.links("img", attribute="src") == ["https://example.com/img/a.png"]


def test_links_honour_base_href() -> None:
    body = (
        b'<html><head><base href="https://mirror.example.org/root/sub/"></head><body>'
        + PAGE
        + b"</body></html>"
    )
    r = response(body)
    links = r.links()
    assert links[:2] == [
        "https://mirror.example.org/root/items/1.html",
        "https://mirror.example.org/items/2.html",
    ]
    assert "https://mirror.example.org/root/sub/?page=2" in links
    assert "https://cdn.example.net/x.js" in links


def test_relative_base_href_resolves_against_the_url() -> None:
    r = response(b'<base href="../docs/"><a href="a.html">a</a>')
    assert r.links() == ["https://example.com/shop/docs/a.html"]
    assert r.urljoin("b.html") == "https://example.com/shop/docs/b.html"


def test_a_non_http_base_is_ignored() -> None:
    r = response(b'<base href="javascript:x()"><base href="/second/"><a href="a">a</a>')
    assert r.links() == ["https://example.com/shop/list/a"]


def test_urljoin_honours_base_without_parsing_first() -> None:
    r = response(b'<HTML><HEAD><BASE HREF="/b/"></HEAD><p>x</p>')
    assert r._tree is None
    assert r.urljoin("c") == "https://example.com/b/c"
    assert r._tree is not None  # a `<base` tag made it parse


def test_urljoin_without_base_does_not_parse() -> None:
    r = response()
    assert r.urljoin("../x y") == "https://example.com/shop/x%20y"
    assert r.urljoin("//host.example/z") == "https://host.example/z"
    assert r._tree is None


def test_urljoin_encodes_the_query_in_the_page_encoding() -> None:
    body = '<meta charset="gbk"><a href="/搜索?q=中文">s</a>'.encode("gbk")
    r = response(body, headers=[("Content-Type", "text/html")])
    expected = "https://example.com/%E6%90%9C%E7%B4%A2?q=%D6%D0%CE%C4"
    assert r.urljoin("/搜索?q=中文") == expected
    assert r.links() == [expected]
    assert Request(expected).url == expected


@pytest.mark.parametrize(
    "body",
    [
        b"<div><p>unclosed <b>bold <i>italic <a href='/x'>link",
        b"<html><body></div></span></p><p>stray closers<a href=/y>y</a>",
        b"<<<>>><a href='/z'>z</a><!-- unterminated comment",
        b"<table><tr><td>cell<a href='/t'>t</a></table></td></tr>",
        b"\x00\x01<a href='/n'>\x00nul\x00</a>\xff\xfe\xfd",
        bytes(range(256)) * 10,
        b"",
        b"   ",
        b"<a href='/only'",
        b"<script>var s = '<a href=\"/in-script\">';</script><a href='/real'>r</a>",
    ],
)
def test_broken_html_never_raises(body: bytes) -> None:
    r = response(body, headers=[("Content-Type", "text/html")])
    assert isinstance(r.text, str)
    assert isinstance(r.css("a"), list)
    r.css_first("p")
    links = r.links()
    assert all(link.startswith("https://example.com/") for link in links)
    assert "https://example.com/in-script" not in links
    r.urljoin("x")


def test_broken_html_still_finds_elements() -> None:
    r = response(b"<div><p>unclosed <b>bold <i>italic <a href='/x'>link")
    assert r.links() == ["https://example.com/x"]
    p = r.css_first("p")
    assert p is not None and p.text() == "unclosed bold italic link"


class Item(msgspec.Struct):
    id: int
    name: str


def test_json() -> None:
    body = b'[{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]'
    r = response(body, headers=[("Content-Type", "application/json")])
    assert r.json() == [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]
    assert r.json(list[Item]) == [Item(1, "a"), Item(2, "b")]
    with pytest.raises(msgspec.ValidationError):
        r.json(list[int])


def test_json_with_bom_and_with_a_declared_charset() -> None:
    r = response(b'\xef\xbb\xbf{"id": 1, "name": "\xc3\xa9"}', headers=[("Content-Type", "application/json")])
    assert r.json(Item) == Item(1, "é")
    gbk = '{"id": 2, "name": "中文"}'.encode("gbk")
    r = response(gbk, headers=[("Content-Type", "application/json; charset=GBK")])
    assert r.json(Item) == Item(2, "中文")


def test_invalid_json_raises_decode_error() -> None:
    with pytest.raises(msgspec.DecodeError):
        response(b"<html>", headers=[("Content-Type", "application/json")]).json()


def test_record_round_trip() -> None:
    body = '<meta charset="gbk"><a href="/a">中文</a>'.encode("gbk")
    request = Request("https://example.com/p", meta={"k": 1}, callback="parse_item")
    original = Response(
        "https://example.com/final",
        203,
        [("Content-Type", "text/html"), ("Set-Cookie", "a=1"), ("Set-Cookie", "b=2")],
        body,
        request,
        elapsed=0.25,
        routing=Routing("shop/spider", depth=2),
    )
    assert original.text  # caches must not leak into the record
    wire = msgspec.msgpack.encode(original.to_record())
    copy = Response.from_record(msgspec.msgpack.decode(wire, type=ResponseRecord))
    assert (copy.url, copy.status, copy.body, copy.elapsed) == ("https://example.com/final", 203, body, 0.25)
    assert copy.headers.get_list("set-cookie") == ["a=1", "b=2"]
    assert (copy.request.url, copy.request.meta, copy.request.callback, copy.routing) == (
        "https://example.com/p",
        {"k": 1},
        "parse_item",
        Routing("shop/spider", depth=2),
    )
    assert copy.meta == {"k": 1}
    assert (copy.encoding, copy.links()) == ("gb18030", ["https://example.com/a"])
    anchor = copy.css_first("a")
    assert anchor is not None and anchor.text() == "中文"


def test_response_keeps_slots() -> None:
    r = response()
    assert not hasattr(r, "__dict__")
    with pytest.raises(AttributeError):
        r.anything = 1  # type: ignore[attr-defined]


def test_base_in_a_utf16_page() -> None:
    body = b"\xff\xfe" + '<base href="/u/"><a href="x">x</a>'.encode("utf-16-le")
    r = response(body, headers=[("Content-Type", "text/html")])
    assert r.urljoin("y") == "https://example.com/u/y"
    assert r.links() == ["https://example.com/u/x"]


def test_a_base_tag_inside_a_script_is_not_a_base() -> None:
    r = response(b"<script>document.write('<base href=\"/evil/\">')</script><a href='x'>x</a>")
    assert r.urljoin("y") == "https://example.com/shop/list/y"
    assert r.links() == ["https://example.com/shop/list/x"]
