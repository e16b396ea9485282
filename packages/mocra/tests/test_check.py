"""`mocra check FILE`: each callback's contracts, judged on its page fetched with the crawl's downloader."""

from __future__ import annotations

import os
import pathlib
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest

from mocra._cli import main
from mocra_core.download import DownloadSettings
from mocra_core.testing import LocalServer, ServerRequest, ServerResponse

BOOK = "<html><head><title>{0}</title></head><body><h1>{0}</h1>{1}</body></html>"
SHOP = """
import msgspec

from mocra import Ctx, Module, Node, Response, Spider


class Book(msgspec.Struct):
    title: str
    price: str | None


class Books(Spider[Book]):
    name = "books"
    contracts = {{"parse_by_attribute": ["@url {base}/book/1", "@returns items 1 1"]}}

    async def parse(self, response: Response, ctx: Ctx[Book]) -> None:
        \"\"\"The list: a request per book.

        @url {base}/list
        @returns requests 2 2
        @returns items 0 0
        \"\"\"
        for href in response.links("a"):
            ctx.follow(href, callback=self.parse_book)

    async def parse_book(self, response: Response, ctx: Ctx[Book]) -> None:
        \"\"\"A book.

        @url {base}/book/{book}
        @returns items 1 1
        @scrapes title price
        \"\"\"
        title, price = response.css_first("h1"), response.css_first(".price")
        ctx.emit(Book(title=title.text() if title else "", price=price.text() if price else None))

    async def parse_with_meta(self, response: Response, ctx: Ctx[Book]) -> None:
        \"\"\"@url {base}/book/1
        @meta {{"currency": "EUR"}}
        @scrapes price
        \"\"\"
        ctx.emit(Book(title="x", price=response.meta.get("currency")))

    async def parse_by_attribute(self, response: Response, ctx: Ctx[Book]) -> None:
        ctx.emit(Book(title="x", price=response.meta.get("currency")))


class Detail(Node[Book]):
    async def parse(self, response: Response, ctx: Ctx[Book]) -> None:
        \"\"\"@url {base}/list
        @returns tasks 2 2
        \"\"\"
        for href in response.links("a"):
            ctx.next({{"url": href}})


class Shop(Module[Book]):
    name = "shop"

    def nodes(self) -> list[Node[Book]]:
        return [Detail()]
"""


@pytest.fixture
def server() -> Iterator[tuple[str, list[ServerRequest]]]:
    """A bookshop: /list links to two books; book 1 has a price, book 2 none; /down answers 503."""
    seen: list[ServerRequest] = []

    async def book(request: ServerRequest) -> ServerResponse:
        seen.append(request)
        number = request.path.rsplit("/", 1)[1]
        price = '<p class="price">£5</p>' if number == "1" else ""
        return ServerResponse(body=BOOK.format(f"Book {number}", price))

    server = LocalServer(
        {
            "/list": ServerResponse(
                body=BOOK.format("List", '<a href="/book/1">1</a><a href="/book/2">2</a>')
            ),
            "/book/1": book,
            "/book/2": book,
            "/down": ServerResponse(status=503, body="busy"),
        }
    )
    with server.run_in_thread() as base_url:
        yield base_url, seen


def write(tmp_path: pathlib.Path, source: str, name: str = "shop_spiders.py") -> pathlib.Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


def check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["check", *args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_every_contract_passes_on_a_good_page(
    server: tuple[str, list[ServerRequest]], tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, _ = server
    path = write(tmp_path, SHOP.format(base=base, book=1))

    code, out = check(capsys, str(path))

    assert code == 0, out
    assert out.splitlines() == [
        "books.parse",
        f"  ok    @url {base}/list: status 200; 0 items, 2 requests, 0 tasks",
        "  ok    @returns requests 2 2",
        "  ok    @returns items 0 0",
        "books.parse_book",
        f"  ok    @url {base}/book/1: status 200; 1 items, 0 requests, 0 tasks",
        "  ok    @returns items 1 1",
        "  ok    @scrapes title price",
        "books.parse_with_meta",  # in the file's order
        f"  ok    @url {base}/book/1: status 200; 1 items, 0 requests, 0 tasks",
        "  ok    @scrapes price",
        "books.parse_by_attribute",
        f"  ok    @url {base}/book/1: status 200; 1 items, 0 requests, 0 tasks",
        "  ok    @returns items 1 1",
        "shop.detail",
        f"  ok    @url {base}/list: status 200; 0 items, 0 requests, 2 tasks",
        "  ok    @returns tasks 2 2",
        "12 contracts in 5 callbacks: 12 passed, 0 failed",
    ]


def test_a_broken_contract_fails_naming_the_item_and_exits_1(
    server: tuple[str, list[ServerRequest]], tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, _ = server
    path = write(tmp_path, SHOP.format(base=base, book=2))  # book 2 has no price

    code, out = check(capsys, str(path), "--spider", "books")

    assert code == 1, out
    assert "  ok    @returns items 1 1" in out
    assert "  FAIL  @scrapes title price: item 1 lacks 'price': {'title': 'Book 2', 'price': None}" in out
    assert out.splitlines()[-1] == "10 contracts in 4 callbacks: 9 passed, 1 failed"
    assert "shop.detail" not in out  # --spider


def test_the_page_is_fetched_with_the_crawls_downloader_and_settings(
    server: tuple[str, list[ServerRequest]], tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, seen = server
    path = write(tmp_path, SHOP.format(base=base, book=1))

    assert check(capsys, str(path), "--spider", "books")[0] == 0
    assert check(capsys, str(path), "--spider", "books", "-s", "download.user_agent=checker/1")[0] == 0

    agents = [request.headers["user-agent"] for request in seen]
    assert agents[0] == DownloadSettings().user_agent
    assert agents[-1] == "checker/1"
    assert "gzip" in seen[0].headers["accept-encoding"]


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize(
    ("body", "failure"),
    [
        ('raise ValueError("no shelf")', "status 200; the callback raised ValueError: no shelf"),
        ("pass", None),
    ],
)
def test_a_callback_that_raises_fails_its_url_contract_and_the_rest_are_not_judged(
    body: str,
    failure: str | None,
    server: tuple[str, list[ServerRequest]],
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base, _ = server
    path = write(
        tmp_path,
        f'''
        from mocra import Spider


        class Broken(Spider[dict]):
            name = "broken"

            async def parse(self, response, ctx):
                """@url {base}/list
                @returns items 0
                """
                {body}
        ''',
    )

    code, out = check(capsys, str(path))

    if failure is None:
        assert code == 0, out
        return
    assert code == 1
    assert f"  FAIL  @url {base}/list: {failure}" in out
    assert "  FAIL  @returns items 0: not judged" in out


@pytest.mark.parametrize(
    ("where", "failure"),
    [
        ("/down", "status 503, which a crawl retries and never parses (retry.statuses)"),
        ("closed", "the download failed: "),
    ],
)
def test_a_page_that_cannot_be_had_fails(
    where: str,
    failure: str,
    server: tuple[str, list[ServerRequest]],
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base, _ = server
    url = f"http://127.0.0.1:{closed_port()}/" if where == "closed" else base + where
    path = write(
        tmp_path,
        f'''
        from mocra import Spider


        class Down(Spider[dict]):
            name = "down"

            async def parse(self, response, ctx):
                """@url {url}
                @returns items 0 0
                """
        ''',
    )

    code, out = check(capsys, str(path), "-s", "download.connect_timeout=2")

    assert code == 1
    assert f"  FAIL  @url {url}: {failure}" in out
    assert out.splitlines()[-1] == "2 contracts in 1 callback: 0 passed, 2 failed"


@pytest.mark.parametrize(
    ("contracts", "problem"),
    [
        ("@returns items 1", "down.parse: contracts: @url is missing: name the page to check"),
        ("@url https://e.com/\n@return items 1", "@return items 1: unknown contract; known: @url, @meta"),
        ("@url https://e.com/\n@returns pages 1", "@returns pages 1: write @returns items|requests|tasks"),
        ("@url https://e.com/\n@returns items 2 1", "@returns items 2 1: MIN must be >= 0 and MAX >= MIN"),
        ("@url https://e.com/\n@meta [1]", "@meta [1]: give a JSON object"),
        ("@url https://e.com/\n@scrapes", "@scrapes: name the fields every item must have"),
        ("@url e.com/x", "down.parse: @url: invalid URL 'e.com/x': scheme must be http or https"),
    ],
)
def test_a_malformed_contract_is_a_usage_error_naming_the_callback(
    contracts: str, problem: str, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = "\n".join(f"        {line}" for line in contracts.splitlines())
    path = write(
        tmp_path,
        f'''
from mocra import Spider


class Down(Spider[dict]):
    name = "down"

    async def parse(self, response, ctx):
        """Contracts.

{lines}
        """
''',
    )

    code, out = check(capsys, str(path))

    assert code == 2
    assert problem in out
    assert str(path) in out


@pytest.mark.parametrize(
    ("contracts", "problem"),
    [
        (
            '{"pasre": ["@url https://e.com/"]}',
            "typo.contracts: names no callback ['pasre']; known: ['parse']",
        ),
        ('["@url https://e.com/"]', "typo.contracts: must map callback names to contract lines"),
    ],
)
def test_a_contracts_attribute_must_map_callbacks(
    contracts: str, problem: str, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(
        tmp_path,
        f"""
        from mocra import Spider


        class Typo(Spider[dict]):
            name = "typo"
            contracts = {contracts}

            async def parse(self, response, ctx): ...
        """,
    )

    code, out = check(capsys, str(path))

    assert code == 2
    assert problem in out


def test_a_file_without_contracts_says_how_to_add_them(tmp_path: pathlib.Path) -> None:
    path = write(
        tmp_path,
        """
        from mocra import Spider


        class Bare(Spider[dict]):
            name = "bare"

            async def parse(self, response, ctx): ...
        """,
    )

    result = subprocess.run(
        [sys.executable, "-m", "mocra", "check", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )

    assert result.returncode == 0, result.stderr
    assert "no contracts found; add them to a callback's docstring" in result.stdout
