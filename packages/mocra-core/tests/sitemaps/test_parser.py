"""SitemapParser: chunked input, formats, hostile and broken input."""

from __future__ import annotations

import gzip
import tracemalloc
from datetime import UTC, datetime, timedelta, timezone

import pytest

from mocra_core.sitemaps import (
    Alternate,
    NestedSitemap,
    SitemapEntry,
    SitemapError,
    SitemapPage,
    SitemapParser,
    parse_w3c_datetime,
)

URL = "https://example.com/sitemap.xml"

URLSET = b"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:xhtml="http://www.w3.org/1999/xhtml">
  <url>
    <loc> https://example.com/en/a?x=1&amp;y=2 </loc>
    <lastmod>2024-05-01T10:30:00+02:00</lastmod>
    <changefreq>Daily</changefreq>
    <priority>0.8</priority>
    <xhtml:link rel="alternate" hreflang="de" href="https://example.com/de/a"/>
    <xhtml:link rel="alternate" hreflang="en" href="https://example.com/en/a?x=1&amp;y=2"/>
    <xhtml:link rel="canonical" href="https://example.com/ignored"/>
  </url>
  <url><loc>https://example.com/b</loc><lastmod>not a date</lastmod><priority>high</priority></url>
  <url><lastmod>2024-01-01</lastmod></url>
</urlset>
"""

INDEX = b"""<?xml version="1.0"?>
<sm:sitemapindex xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9">
  <sm:sitemap><sm:loc>https://example.com/s1.xml.gz</sm:loc><sm:lastmod>2024-03</sm:lastmod></sm:sitemap>
  <sm:sitemap><sm:loc>https://example.com/s2.txt</sm:loc></sm:sitemap>
</sm:sitemapindex>"""


def parse(
    data: bytes, *, size: int = 7, max_bytes: int = 1 << 26
) -> tuple[SitemapParser, list[SitemapEntry]]:
    parser = SitemapParser(URL, max_bytes=max_bytes)
    out: list[SitemapEntry] = []
    for i in range(0, len(data), size):
        out += parser.feed(data[i : i + size])
    out += parser.close()
    return parser, out


def collect_until_error(
    data: bytes, *, size: int = 64, max_bytes: int = 1 << 26
) -> tuple[list[str], SitemapError]:
    parser = SitemapParser(URL, max_bytes=max_bytes)
    urls: list[str] = []
    with pytest.raises(SitemapError) as caught:
        for i in range(0, len(data), size):
            urls += [entry.url for entry in parser.feed(data[i : i + size])]
        urls += [entry.url for entry in parser.close()]
    urls += [entry.url for entry in caught.value.entries]
    return urls, caught.value


@pytest.mark.parametrize("size", [1, 7, 4096])
def test_urlset_fields_and_alternates_in_any_chunking(size: int) -> None:
    parser, entries = parse(URLSET, size=size)
    assert parser.kind == "urlset"
    first, second = entries
    assert first == SitemapPage(
        url="https://example.com/en/a?x=1&y=2",
        sitemap=URL,
        lastmod=datetime(2024, 5, 1, 8, 30, tzinfo=UTC),
        changefreq="daily",
        priority=0.8,
        alternates=(
            Alternate("https://example.com/de/a", "de"),
            Alternate("https://example.com/en/a?x=1&y=2", "en"),
        ),
    )
    # a bad lastmod and priority are absent, not a crash; a <url> without <loc> is skipped
    assert (second.url, second.lastmod, second.priority) == ("https://example.com/b", None, None)


def test_entries_come_out_as_soon_as_they_are_complete() -> None:
    parser = SitemapParser(URL)
    cut = URLSET.index(b"</url>") + len(b"</url>")
    assert parser.feed(URLSET[: cut - 1]) == []
    [page] = parser.feed(URLSET[cut - 1 : cut])
    assert isinstance(page, SitemapPage) and page.url.startswith("https://example.com/en/a")


def test_index_with_prefixed_names() -> None:
    parser, entries = parse(INDEX)
    assert parser.kind == "sitemapindex"
    assert entries == [
        NestedSitemap(
            url="https://example.com/s1.xml.gz", sitemap=URL, lastmod=datetime(2024, 3, 1, tzinfo=UTC)
        ),
        NestedSitemap(url="https://example.com/s2.txt", sitemap=URL),
    ]


def test_gzip_is_found_by_bytes_one_or_two_layers() -> None:
    for data in (gzip.compress(URLSET), gzip.compress(gzip.compress(URLSET)), b"\xef\xbb\xbf" + URLSET):
        assert [e.url for e in parse(data)[1]] == [e.url for e in parse(URLSET)[1]]


def test_multi_member_gzip() -> None:
    lines = [f"https://example.com/{i}\n".encode() for i in range(4)]
    data = b"".join(gzip.compress(line) for line in lines)
    assert [e.url for e in parse(data, size=5)[1]] == [line.decode().strip() for line in lines]


def test_plain_text_sitemap() -> None:
    text = b"\n  https://example.com/1\r\nnot a url\nhttps://example.com/2\n\nhttp://example.com/3"
    parser, entries = parse(text, size=3)
    assert parser.kind == "text"
    assert [e.url for e in entries] == [
        "https://example.com/1",
        "https://example.com/2",
        "http://example.com/3",
    ]


def test_malformed_xml_names_the_sitemap_and_keeps_earlier_entries() -> None:
    data = URLSET.replace(b"<url><loc>https://example.com/b", b"<url><loc>https://example.com/b<oops")
    urls, error = collect_until_error(data)
    assert urls == ["https://example.com/en/a?x=1&y=2"]
    assert error.url == URL and "malformed XML" in error.problem and URL in str(error)


def test_truncated_xml_is_an_error_after_its_entries() -> None:
    data = URLSET[: URLSET.index(b"<url><loc>https://example.com/b") + 20]
    urls, error = collect_until_error(gzip.compress(data))
    assert urls == ["https://example.com/en/a?x=1&y=2"]
    assert "malformed XML" in error.problem


def test_truncated_and_corrupt_gzip() -> None:
    squeezed = gzip.compress(URLSET)
    _, error = collect_until_error(squeezed[: len(squeezed) // 2])
    assert "truncated gzip" in error.problem
    _, error = collect_until_error(squeezed[:20] + b"\x00" * 40 + squeezed[60:])
    assert "gzip" in error.problem


def test_not_a_sitemap() -> None:
    _, error = collect_until_error(b"<html><body>hello</body></html>")
    assert "<html>" in error.problem
    _, error = collect_until_error(b"<?xml version='1.0'?>")
    assert "malformed XML" in error.problem or "no root" in error.problem


def test_a_failed_parser_stays_failed() -> None:
    parser = SitemapParser(URL)
    with pytest.raises(SitemapError):
        parser.feed(b"<urlset><url></urlset>")
    with pytest.raises(SitemapError, match="already failed"):
        parser.feed(b"<url/>")


def test_gzip_bomb_stops_at_the_cap_with_bounded_memory() -> None:
    bomb = gzip.compress(b"<urlset>" + b" " * (200 * 1024 * 1024), compresslevel=9)  # 200 MiB in ~200 KB
    assert len(bomb) < 1024 * 1024
    tracemalloc.start()
    try:
        _, error = collect_until_error(bomb, size=16 * 1024, max_bytes=8 * 1024 * 1024)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "max_bytes=8388608" in error.problem
    assert peak < 4 * 1024 * 1024


BILLION_LAUGHS = (
    b'<?xml version="1.0"?>\n<!DOCTYPE lolz [\n <!ENTITY lol "lol">\n'
    + b"".join(
        b' <!ENTITY lol%d "%s">\n' % (i, (b"&lol%s;" % (str(i - 1).encode() if i > 1 else b"")) * 10)
        for i in range(1, 10)
    )
    + b"]>\n<urlset><url><loc>https://example.com/&lol9;</loc></url></urlset>"
)


def test_entity_bomb_is_refused_before_it_expands() -> None:
    tracemalloc.start()
    try:
        urls, error = collect_until_error(BILLION_LAUGHS)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert urls == []
    assert "entity declaration 'lol' refused" in error.problem
    assert peak < 1024 * 1024  # a billion laughs is 3 GB expanded (59 MB peak under XMLPullParser)


def test_external_entities_are_not_loaded() -> None:
    doc = b'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY x SYSTEM "file:///etc/passwd">]><urlset/>'
    _, error = collect_until_error(doc)
    assert "entity declaration 'x' refused" in error.problem


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024", datetime(2024, 1, 1, tzinfo=UTC)),
        ("2024-05", datetime(2024, 5, 1, tzinfo=UTC)),
        (" 2024-05-07 ", datetime(2024, 5, 7, tzinfo=UTC)),
        ("2024-05-07T10:30Z", datetime(2024, 5, 7, 10, 30, tzinfo=UTC)),
        ("2024-05-07T10:30:15", datetime(2024, 5, 7, 10, 30, 15, tzinfo=UTC)),
        (
            "2024-05-07T10:30:15.25-05:00",
            datetime(2024, 5, 7, 10, 30, 15, 250000, tzinfo=timezone(-timedelta(hours=5))),
        ),
        (
            "2024-05-07T10:30:15+0530",
            datetime(2024, 5, 7, 10, 30, 15, tzinfo=timezone(timedelta(hours=5, minutes=30))),
        ),
        ("2024-02-30", None),
        ("2024-05-07T24:00Z", None),
        ("07/05/2024", None),
        ("2024-05-07T10:30+25:00", None),
        ("", None),
    ],
)
def test_w3c_datetimes(text: str, expected: datetime | None) -> None:
    assert parse_w3c_datetime(text) == expected
