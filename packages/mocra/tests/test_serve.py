"""`mocra serve`, `mocra run --api` and the one path for starting work (CLI, builder, API give one crawl)."""

from __future__ import annotations

import ast
import os
import pathlib
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import msgspec
import pytest

from mocra._cli import main
from mocra_core import JsonlSink, Mocra
from mocra_core.testing import LocalServer

from .tree_crawl import SPIDER, free_port, tree_page

KEY = "serve-key"
PAGES = 40


def read_items(path: pathlib.Path) -> list[int]:
    return sorted(int(msgspec.json.decode(line)["id"]) for line in path.read_bytes().splitlines())


def spider_file(tmp_path: pathlib.Path, base: str) -> pathlib.Path:
    path = tmp_path / "tree_spider.py"
    path.write_text(SPIDER.replace("BASE", base))
    return path


def load_tree(path: pathlib.Path) -> Any:
    from mocra._run import load_spiders

    (spider,) = load_spiders(str(path))
    return spider


def summary_counts(text: str) -> tuple[int, int, dict[str, int]]:
    head = re.search(r"finished: (\d+) pages, (\d+) items", text)
    dropped = re.search(r"dropped (\{.*\})", text)
    assert head and dropped, text
    return int(head[1]), int(head[2]), ast.literal_eval(dropped[1])


def test_cli_builder_and_api_give_the_same_crawl(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MOCRA_ADMIN_KEYS", KEY)
    site = LocalServer(fallback=tree_page(PAGES, 0.0))
    with site.run_in_thread() as base:
        path = spider_file(tmp_path, base)
        settings = ["-s", "crawl.obey_robots=false", "-s", "crawl.concurrency=4"]

        # 1. the CLI
        assert main(["run", str(path), "-o", str(tmp_path / "cli.jsonl"), *settings]) == 0
        cli = summary_counts(capsys.readouterr().out)

        # 2. the builder
        result = (
            Mocra.builder()
            .spider(load_tree(path), JsonlSink(tmp_path / "builder.jsonl"))
            .set("crawl.obey_robots=false", "crawl.concurrency=4")
            .run()
        )
        built = (result.stats.responses, result.stats.items, result.stats.dropped)

        # 3. POST /api/v1/jobs to `mocra serve`, here in this process (Ctrl-C: this process's SIGINT)
        port = free_port()
        seen: dict[str, Any] = {}
        client = threading.Thread(target=post_and_interrupt, args=(f"http://127.0.0.1:{port}", seen))
        client.start()
        out = str(tmp_path / "api-{job}.jsonl")
        code = main(["serve", str(path), "--api", f"127.0.0.1:{port}", "-o", out, *settings])
        client.join(30)
    assert code == 0, seen
    assert seen["started"] == (202, {"job": "tree"})
    api = (seen["run"]["responses"], seen["run"]["items"], seen["run"]["dropped"])

    expected = list(range(PAGES))
    assert read_items(tmp_path / "cli.jsonl") == expected
    assert read_items(tmp_path / "builder.jsonl") == expected
    assert read_items(tmp_path / "api-tree.jsonl") == expected
    assert cli == built == api, (cli, built, api)
    assert cli[2].get("duplicate", 0) > 0  # every page links back to its parent: dedup drops them all


def post_and_interrupt(url: str, seen: dict[str, Any]) -> None:
    """In a thread: start the job over the API, wait for its end, read it, then Ctrl-C the node."""
    try:
        with httpx.Client(base_url=url, headers={"X-API-Key": KEY}) as api:
            deadline = time.monotonic() + 20
            while True:
                try:
                    api.get("/health")
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline
                    time.sleep(0.05)
            started = api.post("/api/v1/jobs", json={"spider": "tree"})
            seen["started"] = (started.status_code, started.json())
            while api.get("/api/v1/jobs").json()[0]["state"] != "stopped":
                assert time.monotonic() < deadline
                time.sleep(0.05)
            seen.update(api.get("/api/v1/jobs/tree").json())
    finally:
        os.kill(os.getpid(), signal.SIGINT)  # the node drains and `main` returns


def start(*args: str, cwd: pathlib.Path) -> tuple[subprocess.Popen[str], str]:
    """`mocra ARGS` in a child process, and the URL of its admin API once it listens."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "MOCRA_ADMIN_KEYS": KEY}
    child = subprocess.Popen(
        [sys.executable, "-m", "mocra", *args], cwd=cwd, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert child.stderr is not None
    for line in iter_lines(child):
        if found := re.search(r"admin API on (http://\S+)", line):
            return child, found[1]
    child.kill()
    raise AssertionError(f"no admin API: {child.communicate()}")


def iter_lines(child: subprocess.Popen[str]) -> Iterator[str]:
    assert child.stderr is not None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = child.stderr.readline()
        if not line:
            return
        yield line


def test_serve_runs_posted_jobs_and_drains_on_ctrl_c(tmp_path: pathlib.Path) -> None:
    site = LocalServer(fallback=tree_page(PAGES, 0.0))
    with site.run_in_thread() as base:
        path = spider_file(tmp_path, base)
        child, url = start(
            "serve", str(path), "--api", "127.0.0.1:0", "-o", "items-{job}.jsonl",
            "-s", "crawl.obey_robots=false", cwd=tmp_path,
        )  # fmt: skip
        try:
            with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {KEY}"}) as api:
                assert api.get("/ready").json() == {"state": "idle"}
                for job in ("one", "two"):
                    assert api.post("/api/v1/jobs", json={"spider": "tree", "job": job}).status_code == 202
                deadline = time.monotonic() + 30
                while any(job["state"] != "stopped" for job in api.get("/api/v1/jobs").json()):
                    assert time.monotonic() < deadline
                    time.sleep(0.05)
            child.send_signal(signal.SIGINT)
            out, err = child.communicate(timeout=30)
        finally:
            child.kill()
    assert child.returncode == 0, err
    assert "one: finished: 40 pages, 40 items" in out and "two: finished: 40 pages, 40 items" in out
    assert (
        read_items(tmp_path / "items-one.jsonl")
        == read_items(tmp_path / "items-two.jsonl")
        == list(range(40))
    )


def test_serve_refuses_a_shared_output_file_at_start(tmp_path: pathlib.Path) -> None:
    path = spider_file(tmp_path, "http://127.0.0.1:9")
    result = subprocess.run(
        [sys.executable, "-m", "mocra", "serve", str(path), "-o", "items.jsonl"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert "put {job} in each file name" in result.stderr


def test_run_with_api_is_steered_over_http(tmp_path: pathlib.Path) -> None:
    site = LocalServer(fallback=tree_page(400, 0.02))
    with site.run_in_thread() as base:
        path = spider_file(tmp_path, base)
        child, url = start(
            "run", str(path), "--api", "127.0.0.1:0", "-o", "items.jsonl",
            "-s", "crawl.obey_robots=false", "-s", "crawl.concurrency=2", cwd=tmp_path,
        )  # fmt: skip
        try:
            with httpx.Client(base_url=url) as api:
                deadline = time.monotonic() + 30
                while api.get("/ready").status_code != 200 or site.hits.total() < 5:
                    assert time.monotonic() < deadline
                    time.sleep(0.05)
                assert api.get("/ready").json() == {"state": "active"}  # the run's engine
                refused = api.post("/api/v1/jobs/tree/stop")
                stopped = api.post("/api/v1/jobs/tree/stop", headers={"X-API-Key": KEY})
            out, err = child.communicate(timeout=60)
        finally:
            child.kill()
    assert refused.status_code == 401
    assert stopped.json() == {"control": "stopping"}
    assert child.returncode == 0, err
    assert "stopped by an operator" in out
    assert 0 < len(read_items(tmp_path / "items.jsonl")) < 400
