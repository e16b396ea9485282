"""The bench crawl with the admin API off and on (a client reading it), in interleaved rounds.

Each round runs `mocra_bench_spider.py` under the shared harness's `measure.py` twice (the order alternates):
`off`, and `on` with `--api 127.0.0.1:PORT` while a poller process GETs `/api/v1/jobs/bench` every second
and keeps `/api/v1/jobs/bench/events?interval=1` open (what the dashboard does). Every crawl's output is
checked against the site's truth. nginx of `../shared/bench` must be up (`nginx_ctl.sh start`).

    uv run python benchmarks/bench_api_crawl.py --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import threading
import time
from typing import Any

REPO = pathlib.Path(__file__).resolve().parents[1]
BENCH = pathlib.Path(os.environ.get("BENCH_DIR", REPO.parent / "shared" / "bench"))
BENCH_PY = os.environ.get("BENCH_PY", "/tmp/benchvenv/bin/python")
OUT = pathlib.Path("/tmp/benchout")


def poll(url: str, stop_after: float) -> None:
    """The client: GET the job every second and read its event stream, until `stop_after` seconds pass."""
    import httpx

    counts = {"gets": 0, "ok": 0, "events": 0}
    deadline = time.monotonic() + stop_after

    def stream() -> None:
        while time.monotonic() < deadline:
            try:
                with (
                    httpx.Client(timeout=None) as client,
                    client.stream("GET", f"{url}/api/v1/jobs/bench/events", params={"interval": 1}) as events,
                ):
                    for line in events.iter_lines():
                        counts["events"] += line.startswith("data: ")
            except httpx.HTTPError:
                time.sleep(0.2)

    threading.Thread(target=stream, daemon=True).start()
    failures = 0
    with httpx.Client(timeout=5) as client:
        while time.monotonic() < deadline and not (counts["ok"] and failures >= 2):  # the crawl ended
            counts["gets"] += 1
            try:
                counts["ok"] += client.get(f"{url}/api/v1/jobs/bench").status_code == 200
                failures = 0
            except httpx.HTTPError:
                failures += 1
            time.sleep(1.0)
    print(json.dumps(counts), flush=True)


def crawl(name: str, results: pathlib.Path, port: int | None) -> None:
    spider = [
        sys.executable,
        str(REPO / "benchmarks" / "mocra_bench_spider.py"),
        "--out",
        str(OUT / f"{name}.jsonl"),
    ]
    if port is not None:
        spider += ["--api", f"127.0.0.1:{port}"]
    poller = None
    if port is not None:
        poller = subprocess.Popen(
            [sys.executable, __file__, "--poll", f"http://127.0.0.1:{port}"],
            stdout=subprocess.PIPE,
            text=True,
        )
    measure = [BENCH_PY, str(BENCH / "measure.py"), "--name", name, "--results", str(results), "--", *spider]
    subprocess.run(measure, check=True, cwd=OUT)
    if poller is not None:
        out, _ = poller.communicate(timeout=30)  # it ends once the API is gone
        print(f"  poller: {out.strip()}")
    subprocess.run([BENCH_PY, str(BENCH / "check_output.py"), str(OUT / f"{name}.jsonl")], check=True)


def summary(results: pathlib.Path) -> dict[str, dict[str, Any]]:
    table = {}
    for name in ("api-off", "api-on"):
        runs = [json.loads(p.read_text()) for p in sorted((results / name).glob("run-*[0-9].json"))]
        pps = [r["app"]["pages_per_s"] for r in runs]
        cpu = [1000 * r["cpu_s"] / r["app"]["pages"] for r in runs]
        table[name] = {
            "rounds": len(runs),
            "pages_per_s": (statistics.median(pps), min(pps), max(pps)),
            "cpu_ms_per_page": (statistics.median(cpu), min(cpu), max(cpu)),
            "rss_mb": statistics.median(r["maxrss_mb"] for r in runs),
            "machine_busy_pct": statistics.median(r["machine_busy_pct"] for r in runs),
        }
    return table


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--port", type=int, default=12899)
    ap.add_argument("--results", default="/tmp/benchresults-api")
    ap.add_argument("--poll", help=argparse.SUPPRESS)  # the poller process
    args = ap.parse_args()
    if args.poll:
        poll(args.poll, stop_after=600)
        return 0
    results = pathlib.Path(args.results)
    for name in ("api-off", "api-on"):
        for old in (results / name).glob("run-*"):
            old.unlink()
    OUT.mkdir(parents=True, exist_ok=True)
    for i in range(args.rounds):
        order = [None, args.port] if i % 2 == 0 else [args.port, None]
        for port in order:
            crawl("api-off" if port is None else "api-on", results, port)
    print(json.dumps(summary(results), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
