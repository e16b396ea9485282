"""`mocra run`, `dlq` and `status` refuse a bad setting at start, naming the key, the rule and its source."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

SPIDER = """
from mocra import Spider

class Pages(Spider):
    name = "pages"
    start_urls = ["http://127.0.0.1:9/"]

    async def parse(self, response, ctx):
        ctx.emit({"url": response.url})
"""


def mocra(
    *args: str, cwd: pathlib.Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("MOCRA_")}
    return subprocess.run(
        [sys.executable, "-m", "mocra", *args],
        cwd=cwd,
        env={**environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


AT_LEAST_1 = "must be at least 1, got 0"
UNKNOWN = "unknown scheme 'garbage'; expected memory, lmdb"


@pytest.mark.parametrize(
    ("args", "env", "error"),
    [
        (["-s", "sink.batch_size=0"], {}, f"-s sink.batch_size=0: sink.batch_size: {AT_LEAST_1}"),
        ([], {"MOCRA_SINK__BATCH_SIZE": "0"}, f"MOCRA_SINK__BATCH_SIZE: sink.batch_size: {AT_LEAST_1}"),
        (["-c", "settings.toml"], {}, f"settings.toml: sink.batch_size: {AT_LEAST_1}"),
        (
            ["-c", "settings.toml", "-s", "sink.batch_size=7", "-s", "queue.max_attempts=0"],
            {"MOCRA_CRAWL__DEDUP": "true"},
            f"-s queue.max_attempts=0: queue.max_attempts: {AT_LEAST_1}",
        ),
        (
            ["-s", "sink.max_retries=-1"],
            {},
            "-s sink.max_retries=-1: sink.max_retries: must be at least 0, got -1",
        ),
        (
            ["-s", "queue.visibility_timeout=0"],
            {},
            "-s queue.visibility_timeout=0: queue.visibility_timeout: must be > 0, got 0.0",
        ),
        (
            ["--queue", "garbage://x"],
            {},
            f"--queue garbage://x: queue.url: {UNKNOWN}, redis, nats or kafka",
        ),
        (
            ["--queue", "redis://127.0.0.1:6379/15", "--job", "j", "-s", "coordination.url=garbage://x"],
            {},
            f"-s coordination.url=garbage://x: coordination.url: {UNKNOWN} or redis",
        ),
        (
            ["-s", "crawl.max_pages=0"],
            {},
            "-s crawl.max_pages=0: crawl.max_pages: must be at least 1 (leave it unset for no limit), got 0",
        ),
    ],
)
def test_run_refuses_a_bad_setting_naming_its_source(
    tmp_path: pathlib.Path, args: list[str], env: dict[str, str], error: str
) -> None:
    (tmp_path / "spider.py").write_text(SPIDER)
    (tmp_path / "settings.toml").write_text("[sink]\nbatch_size = 0\n")
    result = mocra("run", "spider.py", *args, cwd=tmp_path, env=env)
    assert (result.returncode, result.stderr) == (2, f"mocra: error: {error}\n"), result.stdout
    assert result.stdout == ""  # nothing crawled


@pytest.mark.parametrize("command", [["dlq", "list"], ["status"]])
def test_dlq_and_status_name_an_unknown_queue_scheme(tmp_path: pathlib.Path, command: list[str]) -> None:
    result = mocra(*command, "--queue", "garbage://x", "--job", "j", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (
        2,
        "mocra: error: --queue garbage://x: queue.url: unknown scheme 'garbage'; "
        "expected memory, lmdb, redis, nats or kafka\n",
    )


def test_the_log_level_setting_sets_the_level_unless_v_is_given(tmp_path: pathlib.Path) -> None:
    import argparse
    import logging

    from mocra._cli import _settings

    root = logging.getLogger()
    before = root.level
    try:
        args = argparse.Namespace(config=None, set=["log_level=WARNING"], queue=None, store=None, job=None,
                                  job_dir=None, verbose=0)  # fmt: skip
        assert _settings(args).log_level == "WARNING"
        assert root.level == logging.WARNING
        root.setLevel(logging.DEBUG)
        args.verbose = 2  # -vv wins
        _settings(args)
        assert root.level == logging.DEBUG
    finally:
        root.setLevel(before)
