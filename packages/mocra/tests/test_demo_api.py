"""The demo site's member area: login form, session cookie and the JSON API, checked over real HTTP."""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

import anyio
import httpx
import pytest
from selectolax.lexbor import LexborHTMLParser as HTMLParser

from mocra._demo import DemoSite

if TYPE_CHECKING:
    from collections.abc import Iterator

_SET_COOKIE = re.compile(r"session=([0-9a-f]{32}); Path=/; HttpOnly")


@pytest.fixture
def demo() -> DemoSite:
    return DemoSite(seed=7)  # fresh per test: the login counter starts from zero


@pytest.fixture
def client(demo: DemoSite) -> Iterator[httpx.Client]:
    with demo.run_in_thread() as base_url, httpx.Client(base_url=base_url) as http:
        yield http


def _csrf(client: httpx.Client) -> str:
    field = HTMLParser(client.get("/login").text).css_first("form input[name=csrf_token]")
    assert field is not None
    return field.attributes["value"] or ""


def _login(client: httpx.Client, username: str, password: str, csrf: str | None = "") -> httpx.Response:
    """POST the login form; `csrf=""` reads the token from the form, None leaves it out."""
    form = {"username": username, "password": password}
    if csrf is not None:
        form["csrf_token"] = csrf or _csrf(client)
    return client.post("/login", data=form)


def _walk(client: httpx.Client, **params: Any) -> list[dict[str, Any]]:
    """Follow `next_cursor` from the first page; return the pages' JSON bodies in order."""
    pages = []
    cursor: str | None = None
    while True:
        response = client.get("/api/books", params={**params, **({"cursor": cursor} if cursor else {})})
        assert response.status_code == 200, response.text
        assert response.headers["content-type"] == "application/json"
        pages.append(response.json())
        cursor = pages[-1]["next_cursor"]
        if cursor is None:
            return pages


def test_login_form_asks_for_credentials_and_a_csrf_token(demo: DemoSite, client: httpx.Client) -> None:
    response = client.get("/login")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    form = HTMLParser(response.text).css_first("form")
    assert form is not None
    assert (form.attributes["action"], form.attributes["method"]) == ("/login", "post")
    fields = {node.attributes["name"]: node.attributes["type"] for node in form.css("input")}
    assert fields == {"username": "text", "password": "password", "csrf_token": "hidden"}
    token = _csrf(client)
    assert re.fullmatch(r"[0-9a-f]{32}", token)
    assert token == _csrf(client)  # per site, not per visit (two sites: the determinism test)
    assert demo.accounts == {"alice": "wonderland", "bob": "builder"}
    demo.accounts["mallory"] = "x"  # a copy: the site's accounts do not change
    assert "mallory" not in demo.accounts


def test_good_login_sets_a_session_cookie_and_redirects_to_the_account(
    demo: DemoSite, client: httpx.Client
) -> None:
    response = _login(client, "alice", "wonderland")
    assert response.status_code == 303
    assert response.headers["location"] == "/account"
    match = _SET_COOKIE.fullmatch(response.headers["set-cookie"])
    assert match is not None
    assert client.cookies["session"] == match.group(1)
    account = client.get("/account")
    assert account.status_code == 200
    greeting = HTMLParser(account.text).css_first("h1 span.username")
    assert greeting is not None
    assert greeting.text() == "alice"
    assert demo.logins == {"alice": 1}

    again = _login(client, "alice", "wonderland")  # the same account always gets the same token
    assert again.headers["set-cookie"] == response.headers["set-cookie"]
    with httpx.Client(base_url=str(client.base_url)) as other:
        bob = _login(other, "bob", "builder")
        bob_token = _SET_COOKIE.fullmatch(bob.headers["set-cookie"])
        assert bob_token is not None
        assert bob_token.group(1) != match.group(1)
        followed = other.get("/account")
        assert "bob" in followed.text
        assert "alice" not in followed.text
    assert demo.logins == {"alice": 2, "bob": 1}


def test_login_follows_the_redirect_with_the_cookie(client: httpx.Client) -> None:
    form = {"username": "bob", "password": "builder", "csrf_token": _csrf(client)}
    response = client.post("/login", data=form, follow_redirects=True)
    assert response.url.path == "/account"
    assert response.status_code == 200
    assert [r.status_code for r in response.history] == [303]


@pytest.mark.parametrize(
    ("username", "password", "csrf"),
    [
        ("alice", "builder", ""),  # bob's password
        ("alice", "", ""),
        ("carol", "wonderland", ""),
        ("", "", ""),
        ("alice", "wonderland", None),  # no token
        ("alice", "wonderland", "0" * 32),  # a wrong token
    ],
)
def test_bad_login_is_rejected_with_401_and_no_cookie(
    demo: DemoSite, client: httpx.Client, username: str, password: str, csrf: str | None
) -> None:
    response = _login(client, username, password, csrf)
    assert response.status_code == 401
    assert "set-cookie" not in response.headers
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    error = HTMLParser(response.text).css_first("p.error")
    assert error is not None
    assert ("token" in error.text()) is (csrf != "")  # "" = the right token from the form
    assert not client.cookies
    assert client.get("/account").status_code == 401
    assert sum(demo.logins.values()) == 0


@pytest.mark.parametrize("path", ["/api/books", "/api/books/1", "/api/books/999", "/api/nothing"])
@pytest.mark.parametrize("cookie", [None, "session=", "session=" + "0" * 32, "theme=dark"])
def test_api_requires_the_session_cookie(client: httpx.Client, path: str, cookie: str | None) -> None:
    headers = {"Cookie": cookie} if cookie else {}
    response = client.get(path, headers=headers)
    assert response.status_code == 401
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"error": "login required"}


def test_account_requires_the_session_cookie(client: httpx.Client) -> None:
    response = client.get("/account")
    assert response.status_code == 401
    assert HTMLParser(response.text).css_first("a[href='/login']") is not None


def test_cookie_header_with_several_cookies(client: httpx.Client) -> None:
    token = _SET_COOKIE.fullmatch(_login(client, "bob", "builder").headers["set-cookie"])
    assert token is not None
    client.cookies.clear()
    cookie = f'theme=dark; session=nope; session="{token.group(1)}"; lang=en'
    assert client.get("/api/books/1", headers={"Cookie": cookie}).status_code == 200


def test_cursor_pagination_walks_every_book_exactly_once(demo: DemoSite, client: httpx.Client) -> None:
    _login(client, "alice", "wonderland")
    expected = [(item["id"], item["title"]) for item in demo.expected_api_items()]
    assert len(expected) == 50

    pages = _walk(client)
    assert [len(page["items"]) for page in pages] == [10] * 5
    assert [(item["id"], item["title"]) for page in pages for item in page["items"]] == expected
    assert all(sorted(item) == ["id", "title"] for page in pages for item in page["items"])
    cursors = [page["next_cursor"] for page in pages[:-1]]
    assert len(set(cursors)) == 4
    for cursor in cursors:  # opaque: neither page numbers nor offsets
        assert isinstance(cursor, str)
        assert not cursor.isdigit()
        assert len(cursor) == 12

    for limit, sizes in [(7, [7] * 7 + [1]), (20, [20, 20, 10]), (50, [20, 20, 10]), (1, [1] * 50)]:
        walked = _walk(client, limit=limit)
        assert [len(page["items"]) for page in walked] == sizes
        assert [(item["id"], item["title"]) for page in walked for item in page["items"]] == expected
    assert client.get("/api/books", params={"cursor": ""}).json() == pages[0]  # empty = the start


def test_a_cursor_marks_an_offset_whatever_the_limit(client: httpx.Client) -> None:
    _login(client, "alice", "wonderland")
    first = client.get("/api/books", params={"limit": 3}).json()
    after = client.get("/api/books", params={"limit": 5, "cursor": first["next_cursor"]}).json()
    assert [item["id"] for item in after["items"]] == [4, 5, 6, 7, 8]


@pytest.mark.parametrize(
    ("params", "error"),
    [
        ({"cursor": "bogus"}, "unknown cursor"),
        ({"cursor": "2"}, "unknown cursor"),
        ({"limit": "0"}, "limit must"),
        ({"limit": "-3"}, "limit must"),
        ({"limit": "ten"}, "limit must"),
        ({"limit": "2.5"}, "limit must"),
    ],
)
def test_bad_cursor_or_limit_is_a_400(client: httpx.Client, params: dict[str, str], error: str) -> None:
    _login(client, "bob", "builder")
    response = client.get("/api/books", params=params)
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/json"
    assert response.json()["error"].startswith(error)


def test_a_cursor_from_another_site_is_unknown() -> None:
    one, two = DemoSite(seed=1), DemoSite(seed=2)
    with one.run_in_thread() as url_one, two.run_in_thread() as url_two:
        with httpx.Client(base_url=url_one) as a, httpx.Client(base_url=url_two) as b:
            _login(a, "alice", "wonderland")
            _login(b, "alice", "wonderland")
            cursor = a.get("/api/books").json()["next_cursor"]
            assert a.get("/api/books", params={"cursor": cursor}).status_code == 200
            assert b.get("/api/books", params={"cursor": cursor}).status_code == 400


def test_detail_json_matches_expected_and_the_html_site(demo: DemoSite, client: httpx.Client) -> None:
    _login(client, "bob", "builder")
    details = []
    for item in demo.expected_api_items():
        response = client.get(f"/api/books/{item['id']}")
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/json"
        details.append(response.json())
    assert details == demo.expected_api_items()
    assert all(list(detail) == ["id", "title", "price", "upc", "in_stock", "rating"] for detail in details)
    html_items = demo.expected_items()
    assert [(d["title"], f"£{d['price']:.2f}", d["upc"], d["in_stock"]) for d in details] == [
        (i["title"], i["price"], i["upc"], i["in_stock"]) for i in html_items
    ]
    assert {d["rating"] for d in details} <= {1, 2, 3, 4, 5}
    assert [d["id"] for d in details] == list(range(1, 51))


@pytest.mark.parametrize("path", ["/api/books/0", "/api/books/51", "/api/books/abc", "/api/books/", "/api/x"])
def test_unknown_book_is_a_json_404(client: httpx.Client, path: str) -> None:
    _login(client, "alice", "wonderland")
    response = client.get(path)
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"error": "no such book"}


def test_html_pages_stay_html_and_never_link_the_member_area(demo: DemoSite, client: httpx.Client) -> None:
    missing = client.get("/catalogue/nothing.html")
    assert missing.status_code == 404
    assert missing.headers["content-type"] == "text/html; charset=utf-8"
    for path in demo.page_paths[: demo.pages]:
        assert "/login" not in client.get(path).text
        assert "/api/" not in client.get(path).text


def test_expected_summary_is_the_merge_of_the_details(demo: DemoSite) -> None:
    items = demo.expected_api_items()
    summary = demo.expected_summary()
    assert list(summary) == ["books", "in_stock_total", "mean_price"]
    assert summary["books"] == 50
    assert summary["in_stock_total"] == sum(item["in_stock"] for item in items)
    backwards = math.fsum(item["price"] for item in reversed(items)) / 50
    assert summary["mean_price"] == round(backwards, 2)
    pence = sum(int(round(item["price"] * 100)) for item in items)
    assert abs(summary["mean_price"] - pence / 5000) <= 0.005
    items[0]["title"] = "changed"  # fresh dicts: the ground truth does not change
    assert demo.expected_api_items()[0]["title"] != "changed"


def test_same_seed_serves_identical_api_bytes_and_another_seed_differs() -> None:
    def snapshot(demo: DemoSite) -> list[tuple[int, list[tuple[str, str]], bytes]]:
        with demo.run_in_thread() as base_url, httpx.Client(base_url=base_url) as http:
            responses = [http.get("/login"), _login(http, "alice", "wonderland"), http.get("/account")]
            cursor: str | None = None
            while True:
                params = {"limit": 8, **({"cursor": cursor} if cursor else {})}
                responses.append(http.get("/api/books", params=params))
                cursor = responses[-1].json()["next_cursor"]
                if cursor is None:
                    break
            responses += [http.get(f"/api/books/{n}") for n in (1, 17, 30)]
            responses.append(_login(http, "bob", "builder"))
        return [(r.status_code, list(r.headers.multi_items()), r.content) for r in responses]

    one, two = DemoSite(seed=3, books=30), DemoSite(seed=3, books=30)
    first = snapshot(one)
    assert first == snapshot(two)
    assert one.expected_api_items() == two.expected_api_items()
    assert one.expected_summary() == two.expected_summary()
    assert one.logins == two.logins == {"alice": 1, "bob": 1}
    other = snapshot(DemoSite(seed=4, books=30))
    assert other[0] != first[0]  # another CSRF token
    assert other[1][1] != first[1][1]  # another session cookie
    assert other[3] != first[3]  # other books and cursors


def test_tiny_site_has_one_page_and_no_cursor() -> None:
    tiny = DemoSite(seed=1, books=1, per_page=1)
    with tiny.run_in_thread() as base_url, httpx.Client(base_url=base_url) as http:
        _login(http, "alice", "wonderland")
        assert http.get("/api/books").json() == {
            "items": [{"id": 1, "title": tiny.expected_items()[0]["title"]}],
            "next_cursor": None,
        }
        assert http.get("/api/books/1").json() == tiny.expected_api_items()[0]
    assert tiny.expected_summary()["books"] == 1


@pytest.mark.anyio
async def test_login_list_fan_out_and_merge_async() -> None:
    """The multi-node example in miniature: log in, walk the cursors, fetch details concurrently, merge."""
    demo = DemoSite(seed=5, books=33)
    details: list[dict[str, Any]] = []
    async with demo.running() as base_url, httpx.AsyncClient(base_url=base_url) as http:
        login = await http.get("/login")
        token = HTMLParser(login.text).css_first("input[name=csrf_token]")
        assert token is not None
        form = {"username": "bob", "password": "builder", "csrf_token": token.attributes["value"] or ""}
        assert (await http.post("/login", data=form)).status_code == 303
        ids: list[int] = []
        cursor: str | None = None
        while True:
            page = (await http.get("/api/books", params={"cursor": cursor} if cursor else {})).json()
            ids += [item["id"] for item in page["items"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break

        async def fetch(book_id: int) -> None:
            details.append((await http.get(f"/api/books/{book_id}")).json())

        async with anyio.create_task_group() as tg:
            for book_id in ids:
                tg.start_soon(fetch, book_id)
    assert sorted(details, key=lambda d: d["id"]) == demo.expected_api_items()
    merged = {
        "books": len(details),
        "in_stock_total": sum(d["in_stock"] for d in details),
        "mean_price": round(math.fsum(d["price"] for d in details) / len(details), 2),
    }
    assert merged == demo.expected_summary()
    assert demo.logins == {"bob": 1}
    assert demo.server.hits["/api/books"] == 4
