"""`mocra new spider|module`: the generated file runs with `mocra run` as it is, and is checked."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import zipfile
from collections.abc import Iterator

import msgspec
import pytest

from mocra._cli import main
from mocra._new import write_new
from mocra_core.testing import LocalServer, ServerResponse

ROOT = pathlib.Path(__file__).resolve().parents[3]


def page(title: str, body: str = "") -> ServerResponse:
    return ServerResponse(body=f"<html><head><title>{title}</title></head><body>{body}</body></html>")


@pytest.fixture
def site() -> Iterator[str]:
    """A site of three pages; its home links to both others and to another site."""
    server = LocalServer(
        {
            "/": page(
                "Home", '<a href="/a">a</a> <a href="/b">b</a> <a href="https://elsewhere.example/">x</a>'
            ),
            "/a": page("Page A"),
            "/b": page("Page B", '<a href="/">home</a>'),
            "/robots.txt": ServerResponse(body="", headers={"Content-Type": "text/plain"}),
        }
    )
    with server.run_in_thread() as base_url:
        yield base_url


def mocra(*args: str, cwd: pathlib.Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mocra", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def items(path: pathlib.Path) -> list[dict[str, str]]:
    return [msgspec.json.decode(line) for line in path.read_bytes().splitlines()]


def test_a_new_spider_runs_as_generated_and_its_contracts_pass(site: str, tmp_path: pathlib.Path) -> None:
    made = mocra("new", "spider", "shop", site + "/", "--dir", "spiders", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert (tmp_path / "spiders" / "shop.py").is_file()

    ran = mocra("run", "spiders/shop.py", "-o", "items.jsonl", cwd=tmp_path)
    checked = mocra("check", "spiders/shop.py", cwd=tmp_path)

    assert ran.returncode == 0, ran.stdout + ran.stderr
    got = {(item["url"].removeprefix(site), item["title"]) for item in items(tmp_path / "items.jsonl")}
    assert got == {("/", "Home"), ("/a", "Page A"), ("/b", "Page B")}  # the other site is not followed
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "3 contracts in 1 callback: 3 passed, 0 failed" in checked.stdout


def test_a_new_module_runs_as_generated_and_its_contracts_pass(site: str, tmp_path: pathlib.Path) -> None:
    made = mocra("new", "module", "pages", site + "/", cwd=tmp_path)
    assert made.returncode == 0, made.stderr

    ran = mocra("run", "pages.py", "-o", "items.jsonl", cwd=tmp_path)
    checked = mocra("check", "pages.py", cwd=tmp_path)

    assert ran.returncode == 0, ran.stdout + ran.stderr
    got = {(item["url"].removeprefix(site), item["title"]) for item in items(tmp_path / "items.jsonl")}
    assert got == {("/a", "Page A"), ("/b", "Page B")}  # the pages the list links to, on its site
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "5 contracts in 2 callbacks: 5 passed, 0 failed" in checked.stdout


def test_an_existing_file_is_not_overwritten(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "shop.py").write_text("keep me\n")

    code = main(["new", "spider", "shop", "https://example.com/", "--dir", str(tmp_path)])

    assert code == 2
    assert "shop.py: exists already; not overwritten" in capsys.readouterr().err
    assert (tmp_path / "shop.py").read_text() == "keep me\n"


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("", "NAME '': is empty"),
        ("2shop", "NAME '2shop': must start with a letter (a-z, A-Z)"),
        ("my shop", "NAME 'my shop': may hold only letters, digits, '_' and '-', not ' '"),
        ("shop.v2", "NAME 'shop.v2': may hold only letters, digits, '_' and '-', not '.'"),
        ("json", "NAME 'json': its file json.py would shadow the module 'json': choose another name"),
        ("msgspec", "its file msgspec.py would shadow the module 'msgspec'"),
        ("class", "NAME 'class': is a Python keyword: choose another name"),
        ("x" * 65, "is 65 characters long; at most 64"),
    ],
)
def test_a_bad_name_is_refused_saying_what_is_wrong(
    name: str, problem: str, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["new", "spider", name, "https://example.com/", "--dir", str(tmp_path)])

    assert code == 2
    assert problem in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["spider", "shop"], "a spider needs its start URL: mocra new spider NAME URL"),
        (["spider", "shop", "ftp://example.com/"], "URL: 'ftp://example.com/': scheme must be http or https"),
        (["module", "shop", 'https://example.com/"'], "holds a quote or a backslash: percent-encode it"),
    ],
)
def test_a_bad_url_is_refused(
    args: list[str], problem: str, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["new", *args, "--dir", str(tmp_path)]) == 2
    assert problem in capsys.readouterr().err


def test_a_bare_host_gets_https(tmp_path: pathlib.Path) -> None:
    path = write_new("spider", "quotes-2", "quotes.toscrape.com", folder=tmp_path)

    assert path.name == "quotes_2.py"
    source = path.read_text()
    assert 'start_urls = ("https://quotes.toscrape.com",)' in source
    assert 'name = "quotes-2"' in source and "class Quotes2(Spider[Page]):" in source


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """A mypy cache for both kinds: the second check reuses what the first learnt of mocra (9 s cold)."""
    return tmp_path_factory.mktemp("mypy_cache")


@pytest.mark.parametrize("kind", ["spider", "module"])
def test_generated_files_pass_the_projects_ruff_and_mypy_strict(
    kind: str, tmp_path: pathlib.Path, mypy_cache: pathlib.Path
) -> None:
    path = write_new(kind, "shop", "https://example.com/", folder=tmp_path)
    tools = pathlib.Path(sys.executable).parent

    lint = subprocess.run(
        [tools / "ruff", "check", "--no-cache", str(path)], cwd=ROOT, capture_output=True, text=True
    )
    style = subprocess.run(
        [tools / "ruff", "format", "--check", str(path)], cwd=ROOT, capture_output=True, text=True
    )
    types = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(mypy_cache), str(path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )

    assert lint.returncode == 0, lint.stdout
    assert style.returncode == 0, style.stdout
    assert types.returncode == 0, types.stdout


@pytest.mark.slow
def test_the_wheel_holds_the_templates(tmp_path: pathlib.Path) -> None:
    uv = pathlib.Path(sys.executable).parent / "uv"
    built = subprocess.run(
        [
            str(uv) if uv.exists() else "uv",
            "build",
            "--package",
            "mocra",
            "--wheel",
            "--out-dir",
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    [wheel] = tmp_path.glob("mocra-*.whl")

    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())

    assert {"mocra/templates/spider.py.tmpl", "mocra/templates/module.py.tmpl"} <= names
