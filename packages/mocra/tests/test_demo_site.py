"""The offline demo site: pages, ground truth, traps and determinism, checked over real HTTP."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

import httpx
import pytest
from protego import Protego
from selectolax.lexbor import LexborHTMLParser as HTMLParser
from selectolax.lexbor import LexborNode

from mocra._demo import DemoSite

if TYPE_CHECKING:
    from collections.abc import Iterator

_META_CHARSET = re.compile(rb'<meta charset="([^"]+)"')


@pytest.fixture
def demo() -> DemoSite:
    return DemoSite(seed=7)  # fresh per test: hit counts and the one-off 503 start from zero


@pytest.fixture
def client(demo: DemoSite) -> Iterator[httpx.Client]:
    with demo.run_in_thread() as base_url, httpx.Client(base_url=base_url) as http:
        yield http


def _decode(response: httpx.Response) -> str:
    """Decode by the page's own `<meta charset>` (what the demo's encoding trap expects of a crawler)."""
    declared = _META_CHARSET.search(response.content)
    return response.content.decode(declared.group(1).decode() if declared else "utf-8")


def _hrefs(html: str, selector: str) -> list[str]:
    return [node.attributes["href"] or "" for node in HTMLParser(html).css(selector)]


def _walk_catalogue(client: httpx.Client) -> list[str]:
    """Follow `li.next` from page 1; return the catalogue paths in order."""
    path: str | None = "/catalogue/page-1.html"
    seen = []
    while path is not None:
        response = client.get(path)
        assert response.status_code == 200, path
        seen.append(path)
        nexts = _hrefs(response.text, "li.next a")
        path = urljoin(path, nexts[0]) if nexts else None
    return seen


def _text(node: LexborNode | HTMLParser, selector: str) -> str:
    found = node.css_first(selector)
    assert found is not None, selector
    return found.text()


def _parse_detail(html: str, path: str) -> dict[str, Any]:
    tree = HTMLParser(html)
    rows = {_text(row, "th"): _text(row, "td") for row in tree.css("table.table-striped tr")}
    stock = re.search(r"\((\d+) available\)", _text(tree, "p.instock.availability"))
    assert stock is not None
    return {
        "title": _text(tree, "h1"),
        "price": _text(tree, "p.price_color"),
        "upc": rows["UPC"],
        "in_stock": int(stock.group(1)),
        "url": path,
    }


def test_root_redirects_to_the_first_catalogue_page(client: httpx.Client) -> None:
    response = client.get("/")
    assert response.status_code == 302
    assert response.headers["location"] == "/catalogue/page-1.html"
    followed = client.get("/", follow_redirects=True)
    assert followed.url.path == "/catalogue/page-1.html"
    assert followed.status_code == 200


def test_pagination_walks_every_page_and_ends(demo: DemoSite, client: httpx.Client) -> None:
    pages = _walk_catalogue(client)
    assert demo.pages == 5
    assert pages == [f"/catalogue/page-{n}.html" for n in range(1, 6)]
    assert demo.page_paths == (*pages, *(item["url"] for item in demo.expected_items()))
    first, last = client.get(pages[0]).text, client.get(pages[-1]).text
    assert _hrefs(first, "li.previous a") == []
    assert _hrefs(last, "li.previous a") == ["page-4.html"]
    assert _hrefs(last, "li.next a") == []


def test_catalogue_lists_every_book_with_relative_links(demo: DemoSite, client: httpx.Client) -> None:
    expected = demo.expected_items()
    listed: list[tuple[str, str, str]] = []
    for path in _walk_catalogue(client):
        tree = HTMLParser(client.get(path).text)
        for pod in tree.css("article.product_pod"):
            link = pod.css_first("h3 a")
            assert link is not None
            href = link.attributes["href"] or ""
            assert not href.startswith(("/", "http"))
            assert pod.css_first("p.star-rating") is not None
            listed.append((urljoin(path, href), link.attributes["title"] or "", _text(pod, "p.price_color")))
    books = [entry for entry in listed if entry[0] != demo.traps.missing]
    assert [(item["url"], item["title"], item["price"]) for item in expected] == books
    assert len(expected) == 50
    assert len({item["url"] for item in expected}) == 50
    assert all(re.fullmatch(r"£\d+\.\d\d", item["price"]) for item in expected)


def test_detail_pages_match_expected_items(demo: DemoSite, client: httpx.Client) -> None:
    client.get(demo.traps.flaky)  # spend the one-off 503
    parsed = []
    for item in demo.expected_items():
        response = client.get(item["url"])
        assert response.status_code == 200, item["url"]
        parsed.append(_parse_detail(_decode(response), item["url"]))
    assert parsed == demo.expected_items()


def test_detail_pages_link_back_to_pages_already_seen(demo: DemoSite, client: httpx.Client) -> None:
    known = {item["url"] for item in demo.expected_items()} | set(demo.page_paths)
    item = demo.expected_items()[12]  # on page 2
    html = client.get(item["url"]).text
    crumbs = [urljoin(item["url"], href) for href in _hrefs(html, "ul.breadcrumb a")]
    assert crumbs == ["/", "/catalogue/page-1.html", "/catalogue/page-2.html"]
    related = [urljoin(item["url"], href) for href in _hrefs(html, "section.related a")]
    assert len(related) == 2
    assert item["url"] not in related
    assert set(related) <= known


def test_flaky_page_answers_503_once_then_200(demo: DemoSite, client: httpx.Client) -> None:
    first = client.get(demo.traps.flaky)
    assert first.status_code == 503
    assert first.headers["retry-after"] == "1"
    second = client.get(demo.traps.flaky)
    assert second.status_code == 200
    assert client.get(demo.traps.flaky).status_code == 200
    assert demo.server.hits[demo.traps.flaky] == 3
    flaky_item = next(item for item in demo.expected_items() if item["url"] == demo.traps.flaky)
    assert _parse_detail(_decode(second), demo.traps.flaky) == flaky_item


def test_retry_after_is_configurable() -> None:
    demo = DemoSite(seed=7, retry_after=0)
    with demo.run_in_thread() as base_url:
        assert httpx.get(base_url + demo.traps.flaky).headers["retry-after"] == "0"


def test_robots_txt_disallows_admin_which_page_one_links(demo: DemoSite, client: httpx.Client) -> None:
    robots = client.get("/robots.txt")
    assert robots.status_code == 200
    assert robots.headers["content-type"].startswith("text/plain")
    assert robots.text == "User-agent: *\nDisallow: /admin/\n"
    rules = Protego.parse(robots.text)
    base = str(client.base_url)
    assert not rules.can_fetch(base + demo.traps.disallowed, "mocra")
    assert rules.can_fetch(base + "/catalogue/page-1.html", "mocra")
    page_one = client.get("/catalogue/page-1.html").text
    assert demo.traps.disallowed in _hrefs(page_one, "a")
    assert client.get(demo.traps.disallowed).status_code == 200  # only robots.txt keeps a crawler out


def test_latin1_page_is_declared_only_by_meta_charset(demo: DemoSite, client: httpx.Client) -> None:
    response = client.get(demo.traps.latin1)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html"
    assert b'<meta charset="iso-8859-1">' in response.content
    assert b"<h1>Caf\xe9 Stories: " in response.content
    assert b"\xa3" in response.content  # the pound sign, in Latin-1
    with pytest.raises(UnicodeDecodeError):
        response.content.decode("utf-8")
    title = _text(HTMLParser(_decode(response)), "h1")
    assert title.startswith("Café Stories: ")
    assert title == next(i["title"] for i in demo.expected_items() if i["url"] == demo.traps.latin1)


def test_missing_book_is_linked_from_the_last_page_and_answers_404(
    demo: DemoSite, client: httpx.Client
) -> None:
    last = f"/catalogue/page-{demo.pages}.html"
    links = [urljoin(last, href) for href in _hrefs(client.get(last).text, "article.product_pod h3 a")]
    assert demo.traps.missing == "/catalogue/missing_999/index.html"
    assert demo.traps.missing in links
    assert client.get(demo.traps.missing).status_code == 404
    assert demo.traps.missing not in {item["url"] for item in demo.expected_items()}


def test_page_two_is_also_linked_as_url_variants(demo: DemoSite, client: httpx.Client) -> None:
    hrefs = _hrefs(client.get("/catalogue/page-1.html").text, "a")
    links = {"/catalogue/" + href for href in hrefs}  # as written: urljoin would drop the empty "?"
    assert set(demo.traps.variants) == {"/catalogue/page-2.html#top", "/catalogue/page-2.html?"}
    assert set(demo.traps.variants) <= links
    assert "/catalogue/page-2.html" in links
    canonical = client.get("/catalogue/page-2.html").content
    assert client.get("/catalogue/page-2.html?").content == canonical
    assert demo.server.hits["/catalogue/page-2.html"] == 2  # hits are counted by path


def test_same_seed_serves_identical_bytes_and_another_seed_differs() -> None:
    def snapshot(demo: DemoSite) -> list[tuple[int, list[tuple[str, str]], bytes]]:
        paths = ["/", "/robots.txt", demo.traps.missing, demo.traps.disallowed, *demo.page_paths]
        with demo.run_in_thread() as base_url, httpx.Client(base_url=base_url) as http:
            responses = [http.get(path) for path in paths]
        return [(r.status_code, list(r.headers.multi_items()), r.content) for r in responses]

    one, two = DemoSite(seed=3), DemoSite(seed=3)
    assert one.expected_items() == two.expected_items()
    assert snapshot(one) == snapshot(two)
    other = DemoSite(seed=4)
    assert other.expected_items() != one.expected_items()


def test_uneven_and_tiny_sites() -> None:
    uneven = DemoSite(seed=1, books=23, per_page=10)
    assert uneven.pages == 3
    with uneven.run_in_thread() as base_url, httpx.Client(base_url=base_url) as http:
        last = HTMLParser(http.get("/catalogue/page-3.html").text)
        assert len(last.css("article.product_pod")) == 3 + 1  # three books and the missing one

    tiny = DemoSite(seed=1, books=1, per_page=1)
    assert tiny.pages == 1
    assert tiny.traps.variants == ()
    assert tiny.traps.flaky == tiny.traps.latin1 == tiny.expected_items()[0]["url"]
    with tiny.run_in_thread() as base_url, httpx.Client(base_url=base_url) as http:
        assert _hrefs(http.get("/catalogue/page-1.html").text, "ul.pager a") == []
        assert http.get(tiny.traps.flaky).status_code == 503
        response = http.get(tiny.traps.flaky)
        assert _parse_detail(_decode(response), tiny.traps.flaky) == tiny.expected_items()[0]


@pytest.mark.parametrize(("books", "per_page", "retry_after"), [(0, 10, 1), (10, 0, 1), (10, 10, -1)])
def test_bad_arguments_are_rejected(books: int, per_page: int, retry_after: int) -> None:
    with pytest.raises(ValueError, match="at least"):
        DemoSite(books=books, per_page=per_page, retry_after=retry_after)


@pytest.mark.anyio
async def test_async_serving_with_running() -> None:
    demo = DemoSite(seed=7, books=15, per_page=10)
    async with demo.running() as base_url, httpx.AsyncClient(base_url=base_url) as http:
        response = await http.get("/", follow_redirects=True)
        assert response.status_code == 200
        item = demo.expected_items()[-1]
        detail = await http.get(item["url"])
        assert _parse_detail(_decode(detail), item["url"]) == item
    assert demo.server.hits["/"] == 1
