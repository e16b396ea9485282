"""`Response.xpath`: lxml XPath beside `css`, parsed once, lenient on broken HTML, strict on expressions."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mocra_core.http import Request, Response, XNode

PAGE = b"""<!doctype html><html><head><title>Shop</title></head><body>
<h1 class="title"> Blue mug </h1><p class="price">12.50</p>
<ul class="tags"><li class="tag">a</li><li class="tag">b</li><li class="tag">c</li></ul>
<div class="related"><a href="/items/1.html">one</a><a href="/items/2.html">two <b>2</b></a></div>
<!-- a comment --></body></html>"""


def _response(body: bytes, content_type: str = "text/html; charset=utf-8") -> Response:
    return Response("https://shop.example/items/0.html", 200, [("Content-Type", content_type)], body,
                    Request("https://shop.example/items/0.html"))  # fmt: skip


def test_text_nodes_and_attributes_are_strings() -> None:
    r = _response(PAGE)
    assert r.xpath("//h1/text()") == [" Blue mug "]
    assert r.xpath("//ul[@class='tags']/li/text()") == ["a", "b", "c"]
    assert r.xpath("//div[@class='related']/a/@href") == ["/items/1.html", "/items/2.html"]
    assert all(type(s) is str for s in r.xpath("//li/text()"))  # not lxml's smart strings


def test_elements_have_text_attrs_and_xpath() -> None:
    r = _response(PAGE)
    links = r.xpath("//div[@class='related']/a")
    assert isinstance(links, list)
    assert all(isinstance(a, XNode) for a in links)
    second = links[1]
    assert isinstance(second, XNode)
    assert second.tag == "a"
    assert second.attrs == {"href": "/items/2.html"}
    assert second.text() == "two 2"
    assert second.text(deep=False) == "two "
    assert second.text(strip=True, separator="|") == "two|2"
    assert second.xpath_value("string(b)") == "2"
    assert second.xpath("./b/text()") == ["2"]
    assert second.html == '<a href="/items/2.html">two <b>2</b></a>'
    assert second.xpath_first("./i") is None
    assert repr(second) == "<XNode a>"
    comment = r.xpath_first("//comment()")
    assert isinstance(comment, XNode)
    assert comment.tag == "#comment"


def test_values_come_back_as_xpath_computes_them() -> None:
    r = _response(PAGE)
    assert r.xpath_value("count(//li)") == 3.0
    assert r.xpath_value("string(//p[@class='price'])") == "12.50"
    assert r.xpath_value("number(//p[@class='price']) > 10") is True
    assert r.xpath_value("//div[@class='related']/a[2]") == "two 2"  # a node-set: its first node's string
    assert r.xpath_value("//li/text()") == "a"
    assert r.xpath_value("//table") == ""
    assert r.xpath_first("//h1/@class") == "title"
    assert r.xpath_first("//table") is None
    assert r.xpath("//table") == []


def test_variables_are_passed_not_pasted() -> None:
    r = _response(b"""<a title="it's &quot;here&quot;">x</a><a title="other">y</a>""")
    assert r.xpath("//a[@title=$t]/text()", t='it\'s "here"') == ["x"]


def test_the_page_is_parsed_once() -> None:
    r = _response(PAGE)
    r.xpath("//h1")
    tree = r._xtree
    assert tree is not None
    r.xpath("//li")
    r.xpath_first("//p")
    assert r._xtree is tree


@pytest.mark.parametrize(
    "body",
    [
        b"<ul><li>a<li>b</ul></p></div><p>c",  # unclosed and stray tags
        b"<p>a\x00b</p><li>c",  # a NUL byte
        b"\xff\xfe<<<>>><p>x</p>",  # garbage bytes
        b"",  # empty
        b"   \n ",  # whitespace only
        b"plain text, no markup",
    ],
)
def test_broken_html_builds_a_tree(body: bytes) -> None:
    r = _response(body)
    assert isinstance(r.xpath_value("count(//*)"), float)
    assert isinstance(r.xpath("//li/text()"), list)


def test_unclosed_list_items_are_siblings() -> None:
    assert _response(b"<ul><li>a<li>b</ul>").xpath("//li/text()") == ["a", "b"]


def test_a_page_in_another_encoding_reads_as_text() -> None:
    body = '<meta charset="gbk"><p class="n">中文</p>'.encode("gbk")
    r = _response(body, "text/html")
    assert r.encoding == "gb18030"
    assert r.xpath("//p[@class='n']/text()") == ["中文"]


def test_a_utf8_bom_is_not_text() -> None:
    r = _response(b"\xef\xbb\xbf<p>x</p>")
    assert r.xpath_value("string(/)") == "x"


@pytest.mark.parametrize("expression", ["//a[", "//a[@href=]", "count(", "//*[foo()]", "//a[@x=$missing]"])
def test_a_bad_expression_is_a_value_error_naming_it(expression: str) -> None:
    with pytest.raises(ValueError, match="XPath") as caught:
        _response(PAGE).xpath(expression)
    assert repr(expression) in str(caught.value)


def test_a_computing_expression_in_xpath_points_to_xpath_value() -> None:
    with pytest.raises(ValueError, match="use xpath_value"):
        _response(PAGE).xpath("count(//li)")


def test_css_and_xpath_see_the_same_page() -> None:
    r = _response(PAGE)
    assert [n.text() for n in r.css("ul.tags li")] == r.xpath("//ul[@class='tags']/li/text()")


def test_without_lxml_xpath_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['lxml'] = None\n"
        "from mocra_core.http import Request, Response\n"
        "from mocra_core import MissingExtra\n"
        "r = Response('https://e.x/', 200, [], b'<p>x</p>', Request('https://e.x/'))\n"
        "assert r.css_first('p').text() == 'x'\n"
        "try:\n"
        "    r.xpath('//p')\n"
        "except MissingExtra as exc:\n"
        "    print(exc.extra, exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "xpath Response.xpath needs: pip install 'mocra[xpath]'"
