"""The `mocra` command line, run as a user runs it: in a subprocess."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import msgspec
import pytest

from mocra._demo import DemoSite

ROOT = pathlib.Path(__file__).resolve().parents[3]
MOCRA = [sys.executable, "-m", "mocra"]


def run(*args: str, cwd: pathlib.Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run(
        [*MOCRA, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def read_jsonl(path: pathlib.Path) -> list[dict[str, object]]:
    return [msgspec.json.decode(line) for line in path.read_bytes().splitlines()]


def test_demo_end_to_end(tmp_path: pathlib.Path) -> None:
    result = run("demo", cwd=tmp_path)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "all 50 books scraped once each" in result.stdout
    items = read_jsonl(tmp_path / "items.jsonl")
    expected = DemoSite().expected_items()
    assert sorted(items, key=lambda i: str(i["url"])) == sorted(expected, key=lambda i: i["url"])


def test_version_lists_the_packages(tmp_path: pathlib.Path) -> None:
    result = run("version", cwd=tmp_path)
    assert result.returncode == 0
    assert "mocra 0.1.0" in result.stdout
    assert "mocra-core 0.1.0" in result.stdout


def quickstart_from_readme() -> str:
    readme = (ROOT / "README.md").read_text()
    match = re.search(r"<!-- quickstart -->\s*```python\n(.*?)```", readme, re.S)
    assert match, "README.md lost its quick start block"
    return match.group(1)


def test_readme_quick_start_matches_the_example() -> None:
    assert quickstart_from_readme() == (ROOT / "examples" / "quickstart.py").read_text()


@pytest.mark.parametrize("output", ["books.jsonl", "books.csv"])
def test_readme_quick_start_runs_with_mocra_run(tmp_path: pathlib.Path, output: str) -> None:
    site = DemoSite(retry_after=0)
    with site.run_in_thread() as base_url:
        spider = tmp_path / "quickstart.py"
        spider.write_text(quickstart_from_readme().replace("http://127.0.0.1:8000", base_url))
        result = run("run", str(spider), "-o", output, cwd=tmp_path)

    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"finished: \d+ pages, 50 items", result.stdout), result.stdout
    expected = {item["title"] for item in site.expected_items()}
    if output.endswith(".jsonl"):
        titles = {str(item["title"]) for item in read_jsonl(tmp_path / output)}
    else:
        import csv

        with (tmp_path / output).open(newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        assert list(rows[0]) == ["title", "price"]
        titles = {row["title"] for row in rows}
    assert titles == expected
    assert site.server.hits["/catalogue/page-2.html"] == 1


def test_items_go_to_a_file_and_a_database_table_at_once(tmp_path: pathlib.Path) -> None:
    import sqlalchemy as sa

    site = DemoSite(retry_after=0)
    database = f"sqlite:///{tmp_path}/books.db"
    with site.run_in_thread() as base_url:
        spider = tmp_path / "quickstart.py"
        spider.write_text(quickstart_from_readme().replace("http://127.0.0.1:8000", base_url))
        args = ["run", str(spider), "-o", "books.jsonl", "-o", database, "--table", "books", "--key", "title"]
        first = run(*args, cwd=tmp_path)
        second = run(*args, cwd=tmp_path)  # the same books again: the table keeps one row per title

    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert f"items written to books.jsonl, {database}" in second.stdout
    engine = sa.create_engine(database)
    with engine.connect() as db:
        table = db.execute(sa.text("SELECT title, price FROM books")).all()
    engine.dispose()
    expected = {(item["title"], item["price"]) for item in site.expected_items()}
    assert len(table) == len(expected) == 50
    assert set(table) == expected
    assert len(read_jsonl(tmp_path / "books.jsonl")) == 50


def test_table_and_key_need_a_database_output(tmp_path: pathlib.Path) -> None:
    spider = tmp_path / "quickstart.py"
    spider.write_text(quickstart_from_readme())
    result = run("run", str(spider), "-o", "books.jsonl", "--key", "title", cwd=tmp_path)
    assert result.returncode == 2
    assert "--table/--key: apply to a database output" in result.stderr


def test_readme_quick_start_runs_as_a_script(tmp_path: pathlib.Path) -> None:
    site = DemoSite(retry_after=0)
    with site.run_in_thread() as base_url:
        spider = tmp_path / "quickstart.py"
        spider.write_text(quickstart_from_readme().replace("http://127.0.0.1:8000", base_url))
        result = subprocess.run(
            [sys.executable, str(spider)],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert result.returncode == 0, result.stderr
    assert "50 books" in result.stdout


def test_run_reports_a_bad_setting_by_name(tmp_path: pathlib.Path) -> None:
    spider = tmp_path / "quickstart.py"
    spider.write_text(quickstart_from_readme())
    result = run("run", str(spider), "-s", "crawl.concurency=8", cwd=tmp_path)
    assert result.returncode == 2
    assert "concurency" in result.stderr


def test_run_names_the_settings_that_cannot_work_together(tmp_path: pathlib.Path) -> None:
    spider = tmp_path / "quickstart.py"
    spider.write_text(quickstart_from_readme())
    result = run("run", str(spider), "--queue", "nats://127.0.0.1:4222", "--job", "j", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("mocra: error: settings: coordination.url: workers sharing a nats queue")


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["--queue", "redis://127.0.0.1:6379/15"], "--job: name the job"),
        (["--queue", "memory://", "--job", "j"], "--queue: expected a broker URL"),
        (["--queue", "nats://127.0.0.1:1", "--job", "j", "-s", "queue.nats.timeout=1"], "cannot connect: "),
        (["--job-dir", "nowhere"], "holds no crawl state"),
        ([], "one of the arguments --job-dir --queue is required"),
    ],
)
@pytest.mark.parametrize("command", [["dlq", "list"], ["status"]])
def test_dlq_and_status_name_what_is_missing_or_wrong(
    tmp_path: pathlib.Path, command: list[str], args: list[str], problem: str
) -> None:
    result = run(*command, *args, cwd=tmp_path)
    assert result.returncode == 2
    assert problem in result.stderr
    assert not result.stderr.rstrip().endswith("cannot connect:")  # the reason follows


def test_run_reports_a_missing_file(tmp_path: pathlib.Path) -> None:
    result = run("run", "nope.py", cwd=tmp_path)
    assert result.returncode == 2
    assert "nope.py" in result.stderr and "no such file" in result.stderr


def test_run_rejects_an_unknown_output_format(tmp_path: pathlib.Path) -> None:
    spider = tmp_path / "quickstart.py"
    spider.write_text(quickstart_from_readme())
    result = run("run", str(spider), "-o", "items.xml", cwd=tmp_path)
    assert result.returncode == 2
    assert ".xml" in result.stderr


@pytest.mark.parametrize(("verbosity", "quiet"), [(0, True), (1, False)])
def test_aiokafka_chatter_is_kept_out_of_the_output_unless_verbose(verbosity: int, quiet: bool) -> None:
    import logging

    from mocra._cli import _configure_logging

    logger = logging.getLogger("aiokafka")
    before = logger.level
    try:
        logger.setLevel(logging.NOTSET)
        _configure_logging(verbosity)
        assert (
            logger.getEffectiveLevel() > logging.ERROR
        ) is quiet  # its per-retry ERRORs while a broker is away
    finally:
        logger.setLevel(before)


PAGES_SPIDER = """
from mocra import Spider


class Pages(Spider):
    name = "pages"
    start_urls = {urls!r}

    async def parse(self, response, ctx):
        ctx.emit({{"url": response.url}})
"""


def test_run_exits_non_zero_when_every_start_url_is_invalid(tmp_path: pathlib.Path) -> None:
    spider = tmp_path / "pages.py"
    spider.write_text(PAGES_SPIDER.format(urls=["htp:/broken", "http://"]))

    result = run("run", str(spider), "-o", "items.jsonl", cwd=tmp_path)

    assert result.returncode == 3, result.stdout + result.stderr
    assert "nothing was crawled: every start URL was invalid" in result.stdout
    assert "'htp:/broken': scheme must be http or https" in result.stdout
    assert "'http://': no host" in result.stdout


def test_run_exits_non_zero_when_every_request_is_dead_lettered(tmp_path: pathlib.Path) -> None:
    from mocra_core.testing import LocalServer, ServerResponse

    site = LocalServer()
    site.route("/a.html", ServerResponse(500, "down"))
    site.route("/b.html", ServerResponse(503, "down"))
    with site.run_in_thread() as base_url:
        spider = tmp_path / "pages.py"
        spider.write_text(PAGES_SPIDER.format(urls=[f"{base_url}/a.html", f"{base_url}/b.html"]))
        result = run(
            "run", str(spider), "-s", "retry.max_retries=0", "-s", "crawl.obey_robots=false", cwd=tmp_path
        )

    assert result.returncode == 3, result.stdout + result.stderr
    assert "nothing was crawled: all 2 requests were dead-lettered" in result.stdout


def test_run_exits_zero_when_one_start_url_of_several_is_invalid(tmp_path: pathlib.Path) -> None:
    from mocra_core.testing import LocalServer, ServerResponse

    site = LocalServer()
    site.route("/a.html", ServerResponse(body="<p>a</p>"))
    with site.run_in_thread() as base_url:
        spider = tmp_path / "pages.py"
        spider.write_text(PAGES_SPIDER.format(urls=[f"{base_url}/a.html", "htp:/broken"]))
        result = run("run", str(spider), "-o", "items.jsonl", "-s", "crawl.obey_robots=false", cwd=tmp_path)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "finished: 1 pages, 1 items" in result.stdout
    assert "'invalid_url': 1" in result.stdout
    assert "nothing was crawled" not in result.stdout
