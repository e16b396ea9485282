"""`mocra run --reload`: new code of a running crawl's spider, loaded without a restart: none lost or twice.

One process watching its file (it deploys the file itself), and three workers of a Redis job following
`mocra deploy` and a rollback (`--activate 1`).
"""

from __future__ import annotations

import pathlib
import subprocess
import sys
from collections import Counter

import msgspec
import pytest

from .paced import Paced
from .reaping import reaping
from .tree_crawl import REDIS_URL, SPIDER, fresh_job, mocra, serving, tree_page, wait_until

pytestmark = pytest.mark.slow

QUIET = ["-s", "crawl.obey_robots=false", "-s", "crawl.concurrency=2"]


def spider(path: pathlib.Path, base: str, generation: int) -> pathlib.Path:
    path.write_text(SPIDER.replace("BASE", base).replace('"id":', f'"gen": {generation}, "id":'))
    return path


def rows(*paths: pathlib.Path) -> list[dict[str, int]]:
    """The complete items of JSON-lines files, in the order each was written (file after file)."""
    found: list[dict[str, int]] = []
    for path in paths:
        if path.exists():
            lines = path.read_bytes().splitlines()
            found += [msgspec.json.decode(line) for line in lines if line.endswith(b"}")]
    return found


def start(file: pathlib.Path, out: pathlib.Path, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "mocra", "-v", "run", str(file), "--reload", "-o", str(out), *QUIET, *args],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip


def finish(process: subprocess.Popen[bytes]) -> str:
    output = process.communicate(timeout=120)[0].decode()
    assert process.returncode == 0, output
    return output


def test_one_process_reloads_its_edited_file_mid_crawl(tmp_path: pathlib.Path) -> None:
    pages = 120
    paced = Paced(tree_page(pages=pages, delay=0.0), delay=0.2)
    with serving(paced) as site, reaping() as started:
        file = spider(tmp_path / "tree.py", site.url("").rstrip("/"), 1)
        out = tmp_path / "items.jsonl"
        process = start(file, out)
        started.append(process)
        wait_until(lambda: len(rows(out)) >= 10, [process], 60, "no items")
        spider(file, site.url("").rstrip("/"), 2)
        wait_until(lambda: [r["gen"] for r in rows(out)].count(2) >= 10, [process], 60, "no item of gen 2")
        paced.delay = 0.0  # the reload is done: the rest of the crawl at full speed
        output = finish(process)
    found = rows(out)
    assert Counter(row["id"] for row in found) == Counter(range(pages))  # none lost, none twice
    gens = [row["gen"] for row in found]
    assert gens[0] == 1 and gens[-1] == 2, gens
    assert gens.count(2) >= 10, gens
    last_one = max(i for i, gen in enumerate(gens) if gen == 1)
    assert gens[: gens.index(2)] == [1] * gens.index(2)
    assert all(gen == 2 for gen in gens[last_one + 1 :])
    assert "tree: generation 2 loaded from" in output, output


def test_three_workers_follow_a_deploy_and_a_rollback(tmp_path: pathlib.Path) -> None:
    pages = 600
    paced = Paced(tree_page(pages=pages, delay=0.0), delay=0.4)
    with serving(paced) as site, fresh_job(REDIS_URL) as job, reaping() as workers:
        base = site.url("").rstrip("/")
        file = spider(tmp_path / "tree.py", base, 1)
        where = ["--queue", REDIS_URL, "--job", job]
        outs = [tmp_path / f"w{n}.jsonl" for n in range(3)]
        workers += [start(file, out, *where) for out in outs]
        wait_until(lambda: len(rows(*outs)) >= 20, workers, 60, "no items")

        spider(file, base, 2)
        assert "tree generation 2 (" in mocra("deploy", str(file), *where)
        wait_until(lambda: sum(r["gen"] == 2 for r in rows(*outs)) >= 30, workers, 60, "no item of gen 2")

        back = mocra("deploy", "--activate", "1", *where)
        assert "generation 1 active again" in back
        marks = [len(rows(out)) for out in outs]
        wait_until(lambda: after(outs, marks).count(1) >= 20, workers, 60, "no item of gen 1 again")
        paced.delay = 0.0  # the deploy and the rollback are done: the rest of the crawl at full speed
        outputs = [finish(worker) for worker in workers]
        status = mocra("deploy", "--status", *where)
    found = rows(*outs)
    assert Counter(row["id"] for row in found) == Counter(range(pages))  # none lost, none twice
    for out, output in zip(outs, outputs, strict=True):
        gens = [row["gen"] for row in rows(out)]
        assert gens[0] == 1 and 2 in gens, gens  # its queued work of gen 2 drained after the rollback
        assert "tree: generation 2 loaded from" in output  # each loaded it, none restarted
    assert [line.split()[:3] for line in status.splitlines()[1:]][0] == ["tree", "1", "active"], status


def after(outs: list[pathlib.Path], marks: list[int]) -> list[int]:
    """The generations of the items each file got after its mark."""
    return [row["gen"] for out, mark in zip(outs, marks, strict=True) for row in rows(out)[mark:]]
