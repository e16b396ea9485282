"""The documentation site builds strict and offline, and its generated pages cover the code."""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import os
import pathlib
import pkgutil
import re
import subprocess
import sys
from types import ModuleType
from typing import Any

import yaml  # type: ignore[import-untyped]

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

# Runs `mkdocs build` with every outgoing connection and name lookup refused: the build must need none.
OFFLINE_BUILD = """
import socket, sys

def refuse(*args, **kwargs):
    raise OSError(f"network access during the docs build: {args!r}")

socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse

from mkdocs.__main__ import cli

sys.exit(cli(["build", "--strict", "--config-file", sys.argv[1], "--site-dir", sys.argv[2]]))
"""


def hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_hooks", DOCS / "_hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def nav_pages() -> list[str]:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())

    def walk(entry: Any) -> list[str]:
        if isinstance(entry, str):
            return [entry]
        if isinstance(entry, list):
            return [page for item in entry for page in walk(item)]
        if isinstance(entry, dict):
            return [page for value in entry.values() for page in walk(value)]
        return []

    return walk(config["nav"])


def test_the_site_builds_strict_and_offline(tmp_path: pathlib.Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-c", OFFLINE_BUILD, str(ROOT / "mkdocs.yml"), str(tmp_path / "site")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "WARNING" not in output, output
    assert (tmp_path / "site" / "reference" / "settings.html").is_file()
    api = (tmp_path / "site" / "reference" / "api" / "mocra_core.http.html").read_text()
    assert 'id="mocra_core.http.Request"' in api  # the reference was generated from the docstrings
    for dist in hooks().DISTRIBUTIONS:  # each distribution's README is a page of the site
        page = (tmp_path / "site" / "packages" / f"{dist}.html").read_text()
        assert f'<h1 id="{dist}">' in page and "pip install" in page, dist


def test_the_hooks_examples_run() -> None:
    module = hooks()
    failures, tried = doctest.testmod(module)
    assert tried and not failures


def test_every_setting_has_a_meaning() -> None:
    from mocra_core.config import Settings

    missing = [
        f"{section}.{row[0]}".lstrip(".")
        for section, _, rows in hooks().setting_rows(Settings)
        for row in rows
        if not row[-1]
    ]
    assert not missing, f"describe these in their settings struct's `Attributes:` docstring: {missing}"


def test_every_command_is_in_the_cli_reference() -> None:
    from mocra._cli import build_parser

    page = hooks().cli_page()
    for path, _ in hooks()._commands(build_parser()):
        assert f"## `{' '.join(('mocra', *path))}`" in page


def test_every_distribution_readme_is_a_page_of_the_site() -> None:
    readmes = {path.parent.name for path in (ROOT / "packages").glob("*/README.md")}
    assert set(hooks().DISTRIBUTIONS) == readmes
    pages = nav_pages()
    for dist in sorted(readmes):
        assert f"packages/{dist}.md" in pages, f"{dist}'s README has no page in the nav of mkdocs.yml"
        assert hooks().package_page(dist).startswith(f"# {dist}\n")


def test_a_readme_link_without_a_page_becomes_its_path() -> None:
    page = hooks()._relinked(
        "See [the example](../../examples/x.py), [`examples/y.py`](../../examples/y.py) and "
        "[mocra](../mocra/README.md#install).\n```python\nhandlers[0](request)\n```\n",
        "mocra-proxy",
    )
    assert page == (
        "See the example (`examples/x.py`), `examples/y.py` and [mocra](mocra.md#install).\n"
        "```python\nhandlers[0](request)\n```\n"
    )


def test_every_public_package_has_an_api_page() -> None:
    import mocra_core

    pages = set(nav_pages())
    names = ["mocra", "mocra_core", "mocra_proxy", "mocra_store", "mocra_dag", "mocra_cluster"]
    names += [
        f"mocra_core.{info.name}"
        for info in pkgutil.iter_modules(mocra_core.__path__)
        if info.ispkg and getattr(importlib.import_module(f"mocra_core.{info.name}"), "__all__", None)
    ]
    for name in names:
        page = f"reference/api/{name}.md"
        assert page in pages, f"{name} has no page in the nav of mkdocs.yml"
        assert f"::: {name}\n" in (DOCS / page).read_text()


def test_every_page_with_python_code_is_run_by_a_test() -> None:
    tests = "\n".join(
        path.read_text() for path in (ROOT / "packages" / "mocra" / "tests").glob("test_docs_*.py")
    )
    for page in DOCS.rglob("*.md"):
        if re.search(r"^```python$", page.read_text(), flags=re.M):
            relative = page.relative_to(DOCS).as_posix()
            assert f'"{relative}"' in tests or f'"{page.stem}.md"' in tests, f"no test runs docs/{relative}"
