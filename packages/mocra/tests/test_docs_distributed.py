"""docs/distributed.md runs: its shell commands, through the CLI in-process, on the local Redis and NATS.

The page's hosts become 127.0.0.1, its job a fresh one, `spider.py` a small spider of a local site; the rest
of each command is the page's. The `mocra status` sample must have the shape of the real output.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import pathlib
import re
from collections.abc import Iterator, Sequence
from typing import Any

import anyio
import pytest

from mocra import ClusterConfig
from mocra._cli import _settings, build_parser, main
from mocra_core.testing import LocalServer, ServerRequest, ServerResponse

from .doc_code import fenced, shell_commands
from .tree_crawl import NATS_URL, REDIS_URL, free_addr, fresh_job

PAGE = pathlib.Path(__file__).parents[3] / "docs" / "distributed.md"
TEXT = PAGE.read_text()
WORKER, DLQ, CLUSTER = (shell_commands(block) for block in fenced(PAGE, "bash"))
(STATUS_SAMPLE,) = fenced(PAGE, "")

SPIDER = """
from mocra import Ctx, Response, Spider


class Books(Spider[dict]):
    name = "books"
    start_urls = ["BASE/"]

    async def parse(self, response: Response, ctx: Ctx[dict]) -> None:
        ctx.emit({"url": response.url})
        for href in response.links():
            ctx.follow(href)
"""
# the page's commands plus these: one attempt per page, and no robots.txt to fetch
SETTINGS = ["-s", "retry.max_retries=0", "-s", "crawl.obey_robots=false"]


class Site:
    """`/` links to `/bad` (500 while `broken`) and `/next`, which links to six leaves."""

    def __init__(self) -> None:
        self.broken = True
        self.on_root: Any = None  # called (in a thread) before `/` answers

    async def __call__(self, request: ServerRequest) -> ServerResponse:
        if request.path == "/":
            if self.on_root is not None:
                await anyio.to_thread.run_sync(self.on_root)
            return ServerResponse(body='<a href="/bad">bad</a><a href="/next">next</a>')
        if request.path == "/next":
            return ServerResponse(body="".join(f'<a href="/p/{i}">{i}</a>' for i in range(6)))
        if request.path == "/bad" and self.broken:
            return ServerResponse(500, "down")
        return ServerResponse(body="<p>leaf</p>")


@pytest.fixture
def site() -> Iterator[tuple[Site, LocalServer]]:
    handler = Site()
    server = LocalServer(fallback=handler)
    with server.run_in_thread():
        yield handler, server


def cli(argv: Sequence[str], words: dict[str, str], *extra: str) -> str:
    """Run a command of the page (`mocra …`) in-process with its words replaced; its stdout."""
    assert argv[0] == "mocra", argv
    args = [words.get(word, word).strip("[]") for word in argv[1:]]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main([*args, *extra])
    assert code == 0, out.getvalue()
    return out.getvalue()


def shape(text: str) -> list[list[str]]:
    """The words of each line, numbers as `N` and `runs` as `run` (the sample's figures are made up)."""
    return [
        re.sub(r"\d+(\.\d+)?", "N", line).replace(" runs:", " run:").split() for line in text.splitlines()
    ]


def test_a_job_on_redis_runs_is_counted_and_its_dead_letters_replayed(
    site: tuple[Site, LocalServer], tmp_path: pathlib.Path
) -> None:
    (run,), (listing, replay) = WORKER, DLQ
    handler, server = site
    spider = tmp_path / "spider.py"
    spider.write_text(SPIDER.replace("BASE", server.base_url))
    with fresh_job(REDIS_URL) as job:
        words = {"redis://10.0.0.5:6379/0": REDIS_URL, "books-2026-11-29": job, "spider.py": str(spider)}
        first = {**words, "items-$(hostname)-$$.jsonl": str(tmp_path / "a.jsonl")}
        cli(run.argv, first, *SETTINGS, "-s", "crawl.max_pages=3")  # `/`, `/bad`, `/next`: leaves left
        status = cli(["mocra", "status", "--queue", REDIS_URL, "--job", job], words)
        assert shape(status) == shape(STATUS_SAMPLE.replace("books-2026-11-29", job)), status
        assert status.splitlines()[3].split() == ["request", "6", "1"]

        listed = cli(listing.argv, words)
        assert f"{server.base_url}/bad\tHTTP 500 after 1 attempts" in listed and "1 dead letters" in listed
        assert replay.argv[-2:] == ["[--topic", "request]"]
        assert "1 dead letters replayed" in cli(replay.argv, words)
        handler.broken = False
        cli(run.argv, {**words, "items-$(hostname)-$$.jsonl": str(tmp_path / "b.jsonl")}, *SETTINGS)
        assert "nothing left to crawl" in cli(["mocra", "status", "--queue", REDIS_URL, "--job", job], words)
    urls = [line for name in ("a", "b") for line in (tmp_path / f"{name}.jsonl").read_text().splitlines()]
    assert len(urls) == len(set(urls)) == 9  # every page once, over both workers
    assert server.hits["/"] == 1  # the job was seeded once


def test_the_options_are_the_settings_the_page_says() -> None:
    (run,) = WORKER
    same_as = re.search(r"# the same as: (.+)", fenced(PAGE, "bash")[0])
    assert same_as is not None
    options = build_parser().parse_args(run.argv[1:])
    settings = build_parser().parse_args(["run", "spider.py", *same_as[1].split()])
    for parsed in (_settings(options), _settings(settings)):
        assert parsed.queue.url == "redis://10.0.0.5:6379/0" and parsed.crawl.job == "books-2026-11-29"


def test_a_cluster_node_crawls_over_nats_and_answers_cluster_status(
    site: tuple[Site, LocalServer], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    export, seeds, node, ask = CLUSTER
    assert export.argv[0] == "export" and set(seeds.env) == {"SEEDS"}
    handler, server = site
    addr = free_addr()
    spider = tmp_path / "spider.py"
    spider.write_text(SPIDER.replace("BASE", server.base_url))
    monkeypatch.setenv(export.argv[1].partition("=")[0], "change me")
    here = {"$SEEDS": addr, node.env["MOCRA_CLUSTER_ADDR"]: addr, node.env["MOCRA_DATA_DIR"]: str(tmp_path)}
    for name, value in node.env.items():  # one voter: the page's other two are not started here
        monkeypatch.setenv(name, here.get(value, value))
    answers: list[str] = []
    handler.on_root = lambda: answers.append(cli(ask.argv, {ask.argv[-1]: addr}))  # while the node runs
    with fresh_job(NATS_URL) as job:
        words = {"nats://10.0.0.9:4222": NATS_URL, "books": job, "spider.py": str(spider)}
        cli(node.argv, {**words, "items.jsonl": str(tmp_path / "items.jsonl")}, *SETTINGS)
    (answer,) = answers
    lines = answer.splitlines()
    assert [line.split()[0] for line in lines] == ["node", "leader", "term", "applied", "members", "quorum"]
    assert all(word in ask.comment for word in ("leader", "term", "applied index", "members"))
    assert lines[1] == f"leader   {addr}" and lines[4] == f"members  1: {addr}" and lines[5] == "quorum   yes"
    assert len((tmp_path / "items.jsonl").read_text().splitlines()) == 8  # all but `/bad`


def test_the_python_calls_the_page_names_take_those_arguments() -> None:
    calls = re.findall(r"ClusterConfig\.(\w+)\(([^)]*)\)", TEXT)
    assert {name for name, _ in calls} == {"bootstrap", "join", "from_env"}
    for name, arguments in calls:
        given = [part.strip() for part in arguments.split(",") if part.strip()]
        keywords = {part.partition("=")[0]: "x" for part in given if "=" in part}
        positional = ["x" for part in given if "=" not in part]
        inspect.signature(getattr(ClusterConfig, name)).bind(*positional, **keywords)
