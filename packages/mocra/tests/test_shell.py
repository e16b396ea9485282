"""`mocra shell URL`: a page fetched with the crawl's downloader, explored with -e or interactively."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest

from mocra._cli import main
from mocra_core.testing import LocalServer, ServerResponse

PAGE = "<html><head><title>{0}</title></head><body><h1>{0}</h1><a href='/two'>two</a></body></html>"


@pytest.fixture
def site() -> Iterator[tuple[LocalServer, str]]:
    server = LocalServer(
        {
            "/": ServerResponse(body=PAGE.format("One"), headers={"Set-Cookie": "sid=abc; Path=/"}),
            "/two": ServerResponse(body=PAGE.format("Two")),
        }
    )
    with server.run_in_thread() as base:
        yield server, base


def shell(*args: str, stdin: str = "", env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mocra", "shell", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
        check=False,
    )


def test_eval_prints_the_value_of_an_expression(
    site: tuple[LocalServer, str], capsys: pytest.CaptureFixture[str]
) -> None:
    server, base = site
    code = main(["shell", base + "/", "-e", "response.css_first('h1').text(), response.status"])
    assert (code, capsys.readouterr().out) == (0, "('One', 200)\n")
    [request] = server.requests
    assert request.headers["user-agent"].startswith("mocra/")  # the crawl's default headers
    assert request.headers["accept"].startswith("text/html")


def test_settings_apply_and_fetch_keeps_the_cookies(
    site: tuple[LocalServer, str], capsys: pytest.CaptureFixture[str]
) -> None:
    server, base = site
    expression = f"fetch({base + '/two'!r}).css_first('title').text()"
    assert main(["shell", base + "/", "-s", "download.user_agent=probe/1", "-e", expression]) == 0
    assert capsys.readouterr().out == "Two\n"
    first, second = server.requests
    assert first.headers["user-agent"] == second.headers["user-agent"] == "probe/1"
    assert second.headers["cookie"] == "sid=abc"


def test_the_http_cache_answers_a_second_shell(
    site: tuple[LocalServer, str], tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server, base = site
    cache = ["-s", "http_cache.enabled=true", "-s", f"http_cache.dir={tmp_path}"]
    for _ in range(2):
        assert main(["shell", base + "/", *cache, "-e", "response.status"]) == 0
    assert capsys.readouterr().out == "200\n200\n"
    assert server.hits["/"] == 1


def test_a_failed_download_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["shell", "http://127.0.0.1:9/", "-e", "response"]) == 2
    assert "127.0.0.1:9" in capsys.readouterr().err


@pytest.fixture
def fake_ipython(tmp_path: pathlib.Path) -> dict[str, str]:
    """The environment of a `mocra shell` that finds an `IPython` (a fake one that says what it got)."""
    fake = tmp_path / "IPython"
    fake.mkdir()
    (fake / "__init__.py").write_text(
        textwrap.dedent(
            """\
            def start_ipython(argv, user_ns, display_banner):
                print("ipython", sorted(user_ns), user_ns["response"].status)
            """
        )
    )
    return {"PYTHONPATH": str(tmp_path)}


def test_the_interactive_session_reads_stdin(
    site: tuple[LocalServer, str], fake_ipython: dict[str, str]
) -> None:
    server, base = site
    typed = textwrap.dedent(
        f"""\
        print("status", response.status, request.url)
        page = fetch({base + "/two"!r})
        print("now", response is page, response.css_first("h1").text())
        """
    )
    done = shell(base + "/", "--python", stdin=typed, env=fake_ipython)  # --python: not IPython
    assert done.returncode == 0, done.stderr
    assert f"status 200 {base}/" in done.stdout
    assert "now True Two" in done.stdout
    assert f"[mocra] 200 {base}/" in done.stderr  # code.interact writes its banner to stderr
    assert server.hits["/two"] == 1
    assert "ipython" not in done.stdout


def test_ipython_is_used_when_installed(site: tuple[LocalServer, str], fake_ipython: dict[str, str]) -> None:
    _, base = site
    done = shell(base + "/", env=fake_ipython)
    assert done.returncode == 0, done.stderr
    assert "ipython ['Request', 'fetch', 'request', 'response', 'settings', 'view'] 200" in done.stdout
    assert f"[mocra] 200 {base}/" in done.stdout
