"""What the live progress panel costs a crawl: `mocra run` on a terminal, `--progress live|plain|off`.

Runs the crawl benchmark's spider (`mocra_bench_spider.BenchSpider`, 64 in flight) through `mocra run` with
its stderr and stdout on a pseudo-terminal, in interleaved rounds (the order rotates), and prints per mode
the median pages/s of the run's summary and the child's CPU ms per page. Needs the bench site up
(`../shared/bench/nginx_ctl.sh start`); run it under the shared lock:

    flock /tmp/bench.lock uv run python benchmarks/bench_progress.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pathlib
import pty
import re
import statistics
import subprocess
import sys
import tempfile
import threading

WRAPPER = """
import sys
sys.path.insert(0, {benchmarks!r})
from mocra_bench_spider import BenchSpider

class Bench(BenchSpider):
    def __init__(self) -> None:
        super().__init__({base!r})
"""
SETTINGS = ("crawl.obey_robots=false", "crawl.concurrency=64", "crawl.per_domain_concurrency=64")
SUMMARY = re.compile(r"finished: ([\d,]+) pages, ([\d,]+) items in [\d.]+s \(([\d,.]+) pages/s\)")


def _drain(fd: int, into: list[bytes]) -> None:
    with contextlib.suppress(OSError):
        while chunk := os.read(fd, 65536):
            into.append(chunk)


def crawl(spider: pathlib.Path, mode: str, out: pathlib.Path) -> tuple[float, float]:
    """One `mocra run` on a pty; returns (pages/s of its summary, CPU ms per page of the process)."""
    primary, secondary = pty.openpty()
    command = [sys.executable, "-m", "mocra", "run", str(spider), "-o", str(out), "--progress", mode]
    for setting in SETTINGS:
        command += ["-s", setting]
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "100"}
    proc = subprocess.Popen(command, stdin=secondary, stdout=secondary, stderr=secondary, env=env)
    os.close(secondary)
    shown: list[bytes] = []
    reader = threading.Thread(target=_drain, args=(primary, shown))
    reader.start()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    reader.join(30)
    os.close(primary)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(shown).decode(errors="replace"))
    match = SUMMARY.search(text)
    if proc.returncode != 0 or match is None:
        raise SystemExit(f"{mode}: exit {proc.returncode}\n{text[-2000:]}")
    pages = int(match.group(1).replace(",", ""))
    return float(match.group(3).replace(",", "")), (usage.ru_utime + usage.ru_stime) * 1000 / pages


def main() -> int:
    """Run the rounds and print a Markdown table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--base", default="http://127.0.0.1:8731")
    args = ap.parse_args()
    modes = ["live", "plain", "off"]
    results: dict[str, list[tuple[float, float]]] = {mode: [] for mode in modes}
    with tempfile.TemporaryDirectory() as tmp:
        spider = pathlib.Path(tmp) / "bench_run.py"
        benchmarks = str(pathlib.Path(__file__).resolve().parent)
        spider.write_text(WRAPPER.format(benchmarks=benchmarks, base=args.base))
        for round_ in range(args.rounds):
            for j in range(len(modes)):
                mode = modes[(round_ + j) % len(modes)]
                results[mode].append(crawl(spider, mode, pathlib.Path(tmp) / f"{mode}.jsonl"))
                print(f"round {round_ + 1} {mode}: {results[mode][-1]}", file=sys.stderr)
    off = statistics.median(rate for rate, _ in results["off"])
    print("| --progress | pages/s median (min–max) | vs off | CPU ms/page median |")
    print("|---|---|---|---|")
    for mode in modes:
        rates = [rate for rate, _ in results[mode]]
        cpu = statistics.median(ms for _, ms in results[mode])
        median = statistics.median(rates)
        spread = f"{min(rates):,.0f}–{max(rates):,.0f}"
        print(f"| {mode} | {median:,.0f} ({spread}) | {median / off:.2f}× | {cpu:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
