"""The examples run as documented, against the offline demo site."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import msgspec

from mocra._demo import DemoSite

ROOT = pathlib.Path(__file__).resolve().parents[3]


def run_example(name: str, tmp_path: pathlib.Path, site: DemoSite, *args: str) -> tuple[str, pathlib.Path]:
    with site.run_in_thread() as base_url:
        source = (ROOT / "examples" / name).read_text().replace("http://127.0.0.1:8000", base_url)
        example = tmp_path / name
        example.write_text(source)
        output = tmp_path / "out.jsonl"
        result = subprocess.run(
            [sys.executable, "-m", "mocra", "run", str(example), "-o", str(output), *args],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout, output


def test_members_module_logs_in_pages_fans_out_and_merges(tmp_path: pathlib.Path) -> None:
    site = DemoSite(retry_after=0)

    stdout, output = run_example("bookshop_members.py", tmp_path, site)

    rows = [msgspec.json.decode(line) for line in output.read_bytes().splitlines()]
    books = [row for row in rows if "upc" in row]
    summaries = [row for row in rows if "mean_price" in row]
    assert sorted(books, key=lambda b: b["id"]) == sorted(site.expected_api_items(), key=lambda b: b["id"])
    assert summaries == [site.expected_summary()]
    assert summaries[0] == rows[-1]  # the merge ran last, once every detail was done
    assert site.logins == {"alice": 1}
    assert "finished" in stdout


def test_watch_run_prints_each_part_s_states_in_order(tmp_path: pathlib.Path) -> None:
    with DemoSite().run_in_thread() as base_url:
        example = tmp_path / "watch_run.py"
        example.write_text(
            (ROOT / "examples" / "watch_run.py").read_text().replace("http://127.0.0.1:8000", base_url)
        )
        result = subprocess.run(
            [sys.executable, str(example)], capture_output=True, text=True, timeout=120, check=False
        )

    assert result.returncode == 0, result.stdout + result.stderr
    engine = [
        line.split(": ", 1)[1] for line in result.stdout.splitlines() if line.strip().startswith("engine:")
    ]
    assert [change.split(" (")[0] for change in engine] == [
        "- -> prepare", "prepare -> ready", "ready -> active", "active -> draining", "draining -> stopped",
    ]  # fmt: skip
    assert result.stdout.splitlines()[-1].startswith("finished: ")
    assert "engine stopped" in result.stdout.splitlines()[-1]
