"""`mocra deploy`: new code of a job's spiders as a generation, refused if it fails to import, rolled back."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

from .tree_crawl import REDIS_URL, SPIDER, fresh_job, items, mocra, serving, tree_page

pytestmark = pytest.mark.slow


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mocra", *args], capture_output=True, text=True, timeout=120)


def spider(path: pathlib.Path, base: str, generation: int) -> pathlib.Path:
    path.write_text(SPIDER.replace("BASE", base).replace('"id":', f'"gen": {generation}, "id":'))
    return path


def test_deploy_status_a_refused_import_and_a_rollback(tmp_path: pathlib.Path) -> None:
    file = spider(tmp_path / "tree.py", "http://127.0.0.1:1", 1)
    with fresh_job(REDIS_URL) as job:
        where = ["--queue", REDIS_URL, "--job", job]
        first = mocra("deploy", str(file), *where)
        assert f"job {job!r}: tree generation 1 (" in first and "tree is new to the job" in first

        spider(file, "http://127.0.0.1:1", 2)
        second = mocra("deploy", str(file), *where)
        assert "tree generation 2 (" in second and "generation 1 drains" in second

        file.write_text("from mocra import Spider\nraise SystemExit('not ready')\n")
        refused = run("deploy", str(file), *where)
        assert refused.returncode == 2
        assert "not activated: importing it failed: SystemExit: not ready" in refused.stderr

        status = mocra("deploy", "--status", *where).splitlines()
        assert [line.split()[:3] for line in status[1:]] == [
            ["tree", "1", "draining"],
            ["tree", "2", "active"],
        ]

        back = mocra("deploy", "--activate", "1", *where)
        assert "generation 1 active again" in back
        assert [line.split()[:3] for line in back.splitlines()[2:]] == [
            ["tree", "1", "active"],
            ["tree", "2", "draining"],
        ]
        assert (
            run("deploy", "--activate", "9", *where)
            .stderr.strip()
            .endswith("not activated: no module has a generation 9 (the latest: tree 2)")
        )


def test_an_edited_worker_alone_on_its_job_starts_the_next_generation(tmp_path: pathlib.Path) -> None:
    # with another worker of the job alive, the same run is refused until deployed (see
    # mocra-core's tests/engine/test_job_modules.py): stopping every worker, editing, running again works
    with serving(tree_page(pages=7, delay=0.0)) as site, fresh_job(REDIS_URL) as job:
        site_url = site.url("").rstrip("/")
        file = spider(tmp_path / "tree.py", site_url, 1)
        where = ["--queue", REDIS_URL, "--job", job]
        mocra("run", str(file), "-o", str(tmp_path / "one.jsonl"), *where, "-s", "crawl.obey_robots=false")
        assert sorted(items(tmp_path / "one.jsonl")) == list(range(7))

        spider(file, site_url, 2)  # edited, not deployed, run when no worker of the job is alive
        mocra("run", str(file), "-o", str(tmp_path / "two.jsonl"), *where, "-s", "crawl.obey_robots=false")
        status = mocra("deploy", "--status", *where).splitlines()
        assert status[-1].split()[:3] == ["tree", "2", "active"]
        assert any(line.split()[:3] == ["tree", "1", "retired"] for line in status)
