"""`mocra run` shows the live panel on a terminal (a pty) and plain lines when its output is piped."""

from __future__ import annotations

import contextlib
import os
import pathlib
import pty
import re
import subprocess
import sys
import threading

import anyio

from mocra_core.testing import LocalServer, ServerRequest, ServerResponse

SPIDER = """
from mocra import Ctx, Response, Spider

class Slow(Spider[dict]):
    name = "slow"
    start_urls = ["{base}/"]

    async def parse(self, response: Response, ctx: Ctx[dict]) -> None:
        for href in response.links("a"):
            ctx.follow(href, callback=self.page)

    async def page(self, response: Response, ctx: Ctx[dict]) -> None:
        ctx.emit({{"url": response.url}})
"""

PAGES = 24  # 8 at a time (the per-host limit), 0.5 s each: the run outlasts the first progress report (1 s)


async def slow_page(request: ServerRequest) -> ServerResponse:
    await anyio.sleep(0.5)
    return ServerResponse(body=b"<p>page</p>")


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR")}
    return {**env, "TERM": "xterm-256color", "COLUMNS": "100", "PYTHONUNBUFFERED": "1"}


def read_all(fd: int) -> bytes:
    chunks = []
    with contextlib.suppress(OSError):  # EIO: the child closed the terminal
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_mocra_run_draws_the_panel_on_a_terminal_and_plain_lines_into_a_pipe(tmp_path: pathlib.Path) -> None:
    links = "".join(f'<a href="/p/{i}">{i}</a>' for i in range(PAGES))
    site = LocalServer({"/": ServerResponse(body=links.encode())}, fallback=slow_page)
    with site.run_in_thread() as base_url:
        spider = tmp_path / "slow.py"
        spider.write_text(SPIDER.format(base=base_url))
        settings = ["-s", "crawl.obey_robots=false", "-s", "crawl.per_domain_concurrency=8"]
        command = [sys.executable, "-m", "mocra", "run", str(spider), *settings]
        primary, secondary = pty.openpty()
        on_terminal = subprocess.Popen(
            command, cwd=tmp_path, env=environment(), stdin=secondary, stdout=secondary, stderr=secondary
        )
        os.close(secondary)
        piped = subprocess.Popen(
            [*command, "--progress-every", "0.5"], cwd=tmp_path, env=environment(),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        shown: list[bytes] = []
        reader = threading.Thread(target=lambda: shown.append(read_all(primary)))
        reader.start()
        out, err = piped.communicate(timeout=60)
        assert on_terminal.wait(60) == 0
        reader.join(10)
        os.close(primary)

    raw = shown[0].decode()
    terminal = re.sub(r"\x1b\[[0-9;]*m", "", raw)  # colours off; cursor moves kept
    assert piped.returncode == 0, err.decode()
    assert "╭─ mocra · 0:0" in terminal and "to download" in terminal, terminal
    assert "\x1b[?25l" in raw and "\x1b[1A\x1b[2K" in terminal  # drawn in place, then taken away
    assert f"pages {PAGES + 1} | items {PAGES} | errors 0 | dead letters 0 |" in terminal
    assert f"finished: {PAGES + 1} pages, {PAGES} items" in terminal

    plain = err.decode()
    assert "\x1b" not in plain + out.decode()
    assert "INFO mocra.progress: pages " in plain and "queued: generate " in plain, plain
    assert f"finished: {PAGES + 1} pages, {PAGES} items" in out.decode()
