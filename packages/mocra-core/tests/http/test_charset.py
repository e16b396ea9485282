import pytest

from mocra_core.http import Request, Response
from mocra_core.http._charset import declared_encoding, lookup_encoding

URL = "https://example.com/page"
CHINESE = "中华人民共和国成立于一九四九年，这是一个用于测试编码检测的新闻页面。"
JAPANESE = "日本語のテキストです。東京都は日本の首都です。①～"  # ① and ～ are cp932-only


def response(body: bytes, content_type: str | None = "text/html") -> Response:
    headers = [("Content-Type", content_type)] if content_type else []
    return Response(URL, 200, headers, body, Request(URL))


def text_of(r: Response, selector: str) -> str:
    node = r.css_first(selector)
    assert node is not None
    return node.text()


def test_gbk_declared_by_meta_charset() -> None:
    body = f'<html><head><meta charset="gbk"><title>新闻</title></head><body><p>{CHINESE}</p></body></html>'
    r = response(body.encode("gbk"))
    assert r.encoding == "gb18030"
    assert CHINESE in r.text
    assert text_of(r, "title") == "新闻"
    assert text_of(r, "p") == CHINESE


def test_gb2312_declared_by_meta_http_equiv() -> None:
    head = '<meta http-equiv="Content-Type" content="text/html; charset=gb2312">'
    r = response(f"<html><head>{head}</head><body><h1>{CHINESE}</h1></body></html>".encode("gb2312"))
    assert r.encoding == "gb18030"
    assert text_of(r, "h1") == CHINESE


def test_shift_jis_declared_by_header() -> None:
    r = response(f"<p>{JAPANESE}</p>".encode("cp932"), "text/html; charset=Shift_JIS")
    assert r.encoding == "cp932"
    assert text_of(r, "p") == JAPANESE


def test_utf8_bom_beats_a_wrong_header_and_is_not_text() -> None:
    r = response(b"\xef\xbb\xbf" + "<p>café 中文</p>".encode(), "text/html; charset=iso-8859-1")
    assert r.body.startswith(b"\xef\xbb\xbf")
    assert r.encoding == "utf-8"
    assert r.text == "<p>café 中文</p>"
    assert text_of(r, "p") == "café 中文"


def test_utf16_bom() -> None:
    r = response(b"\xff\xfe" + "<p>中文</p>".encode("utf-16-le"), None)
    assert (r.encoding, r.text) == ("utf-16-le", "<p>中文</p>")
    assert text_of(r, "p") == "中文"


def test_latin1_declared_decodes_as_windows_1252_like_browsers() -> None:
    body = "<p>café – 5 €</p>".encode("cp1252") + b"\x81"
    r = response(body, "text/html; charset=ISO-8859-1")
    assert r.encoding == "cp1252"
    assert r.text == "<p>café – 5 €</p>\x81"  # 0x81 is undefined in cp1252: browsers keep it as U+0081


def test_undeclared_utf8_is_detected_cheaply() -> None:
    r = response("<p>naïve café, 中文</p>".encode(), None)
    assert (r.encoding, r.text) == ("utf-8", "<p>naïve café, 中文</p>")


def test_undeclared_gbk_is_detected() -> None:
    r = response(f"<html><body><p>{CHINESE * 3}</p></body></html>".encode("gbk"), "text/html")
    assert r.encoding == "gb18030"
    assert text_of(r, "p") == CHINESE * 3


def test_a_wrong_declaration_is_overruled_when_most_of_the_body_fails() -> None:
    r = response(f"<html><body><p>{CHINESE * 3}</p></body></html>".encode("gbk"), "text/html; charset=utf-8")
    assert r.encoding == "gb18030"
    assert CHINESE in r.text


def test_a_few_bad_bytes_keep_the_declaration_with_replacements() -> None:
    body = f"<p>{CHINESE}</p>".encode("gbk")[:-5]  # cut inside the last character
    r = response(body, "text/html; charset=gbk")
    assert r.encoding == "gb18030"
    assert r.text.startswith(f"<p>{CHINESE[:-2]}")
    assert r.text.endswith("\ufffd")


def test_header_wins_over_meta_and_unknown_labels_fall_through() -> None:
    body = '<meta charset="gbk"><p>中文</p>'.encode("gbk")
    assert response(body, "text/html; charset=no-such-charset").encoding == "gb18030"
    assert response(body, "text/html; charset=base64").encoding == "gb18030"
    assert response(body, 'text/html; charset="koi8-r"').encoding == "koi8-r"


def test_meta_is_looked_for_in_the_first_4_kb_only() -> None:
    body = b"<!--" + b"x" * 5000 + b'--><meta charset="koi8-r"><p>x</p>'
    assert declared_encoding(body, "text/html") is None
    assert response(body).encoding == "utf-8"


def test_meta_is_ignored_outside_markup() -> None:
    body = b'{"html": "<meta charset=gbk>"}'
    assert declared_encoding(body, "application/json") is None
    assert declared_encoding(body, "text/html") == ("gb18030", 0)


def test_meta_cannot_declare_utf16() -> None:
    assert response(b'<meta charset="utf-16"><p>x</p>').encoding == "utf-8"


def test_xml_declaration() -> None:
    body = '<?xml version="1.0" encoding="GB2312"?><urlset><loc>中文</loc></urlset>'.encode("gbk")
    assert response(body, "application/xml").encoding == "gb18030"


def test_text_lossy_never_detects() -> None:
    r = response(f"<p>{CHINESE * 3}</p>".encode("gbk"), None)
    assert "\ufffd" in r.text_lossy  # read as UTF-8, with replacements
    assert CHINESE in r.text


def test_binary_garbage_never_raises() -> None:
    r = response(bytes(range(256)) * 40, "text/html")
    assert isinstance(r.text, str)
    assert isinstance(r.text_lossy, str)
    assert r.css("p") == []
    assert r.links() == []


@pytest.mark.parametrize(
    ("label", "codec"),
    [
        ("utf-8", "utf-8"),
        ("UTF8", "utf-8"),
        (" unicode-1-1-utf-8 ", "utf-8"),
        ("gb2312", "gb18030"),
        ("GBK", "gb18030"),
        ("x-gbk", "gb18030"),
        ("shift_jis", "cp932"),
        ("x-sjis", "cp932"),
        ("windows-31j", "cp932"),
        ("latin-1", "cp1252"),
        ("iso-8859-1", "cp1252"),
        ("us-ascii", "cp1252"),
        ("euc-kr", "cp949"),
        ("big5", "big5hkscs"),
        ("iso-8859-9", "cp1254"),
        ("tis-620", "cp874"),
        ("windows-1251", "cp1251"),
        ("euc-jp", "euc_jp"),
        ("koi8-r", "koi8-r"),
        ("utf-7", None),
        ("iso-2022-kr", None),
        ("rot13", None),
        ("hex", None),
        ("", None),
    ],
)
def test_label_mapping(label: str, codec: str | None) -> None:
    assert lookup_encoding(label) == codec
