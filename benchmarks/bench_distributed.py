"""Distributed crawl benchmark: start N workers of one crawl, check their outputs, summarize the runs.

Used by `benchmarks/run_distributed.sh`; three sub-commands:

    bench_distributed.py workers --procs 2 --timeout 900 -- CMD ARGS...   # "{k}" in ARGS = worker index
    bench_distributed.py check --record /tmp/benchresults/redis_2w OUT-0.jsonl OUT-1.jsonl
    bench_distributed.py summary [--results /tmp/benchresults] [--json]

`workers` runs under the harness's `measure.py` (which times the whole process tree and passes
`$BENCH_APP_STATS`): it starts the workers side by side, each with its own stats file, waits for all of
them (killing them all at `--timeout`), and writes one merged record, as the harness's `multi_proc.py`:
`pages_per_s` = total responses / (earliest worker start → latest worker end), each worker's clock
starting after its imports; `pages_per_s_crawl` = total responses / (first response → last response over
all workers), the figure that compares with scrapy-redis, whose workers idle before they close.

`check` unions the item files of one run and compares them with the site's ground truth
(`/tmp/benchsite/_meta/truth.jsonl`): every item present and equal, duplicates counted (a distributed crawl
may emit an item twice: redelivered work is allowed, and reported). It adds the result to the latest run
record of the group, so `summary` can show it. Stdlib only, like the harness.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from typing import Any
from urllib.parse import urlsplit

TRUTH = "/tmp/benchsite/_meta/truth.jsonl"
BACKENDS = ("redis", "nats", "kafka")
CORES = os.cpu_count() or 1


# ---------------------------------------------------------------- workers


def run_workers(procs: int, timeout: float, stall: float, watch: str | None, cmd: list[str]) -> int:
    """Start `procs` copies of `cmd` ("{k}" → index), wait, merge their stats into `$BENCH_APP_STATS`.

    All workers are killed at `timeout`, or when the files matching `watch` (their outputs) have not
    grown for `stall` seconds.
    """
    app_path = os.environ.get("BENCH_APP_STATS") or f"/tmp/benchout/dist-{os.getpid()}.app.json"
    base = app_path.removesuffix(".app.json")
    workers = []
    spawned: list[float] = []  # time.monotonic() at each worker's fork: its start-up counts
    for k in range(procs):
        stats = f"{base}.w{k}.json"
        if os.path.exists(stats):
            os.remove(stats)
        log = open(f"{base}.w{k}.log", "wb")  # closed after the wait
        argv = [part.replace("{k}", str(k)) for part in cmd]
        env = dict(os.environ, BENCH_APP_STATS=stats)
        spawned.append(time.monotonic())
        process = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        workers.append((process, stats, log))
    deadline = time.monotonic() + timeout
    problem = wait_all([process for process, _, _ in workers], deadline, stall, watch)
    timed_out = problem is not None
    if timed_out:
        for process, _, _ in workers:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process, _, _ in workers:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
    records = []
    for k, (process, stats, log) in enumerate(workers):
        log.close()
        record: dict[str, Any] = {"worker": k, "rc": process.returncode, "t_spawn": spawned[k]}
        try:
            with open(stats) as f:
                record.update(json.load(f))
        except (OSError, ValueError):
            pass
        records.append(record)
    merged = merge(records, problem=problem)
    with open(app_path, "w") as f:
        json.dump(merged, f, indent=1, sort_keys=True)
    print(json.dumps({k: v for k, v in merged.items() if k != "workers"}))
    if timed_out:
        return 124
    return 0 if all(r["rc"] == 0 for r in records) else 1


def wait_all(
    processes: list[subprocess.Popen[bytes]], deadline: float, stall: float, watch: str | None
) -> str | None:
    """Wait for every process; `None`, or why they must be killed (timeout, or no progress)."""
    start = time.monotonic()
    size, grown = -1, start
    while any(p.poll() is None for p in processes):
        now = time.monotonic()
        if now > deadline:
            return f"timeout after {now - start:.0f} s"
        if watch:
            current = sum(os.path.getsize(f) for f in glob.glob(watch))
            if current != size:
                size, grown = current, now
            elif now - grown > stall:
                return f"stalled: no new item for {stall:.0f} s ({size:,} bytes written)"
        time.sleep(0.5)
    return None


def merge(records: list[dict[str, Any]], *, problem: str | None) -> dict[str, Any]:
    """One run record from the workers' records (pages summed, spans over all workers)."""
    pages = sum(r.get("pages") or 0 for r in records)
    out: dict[str, Any] = {
        "tool": records[0].get("tool", "?") if records else "?",
        "procs": len(records),
        "pages": pages,
        "items": sum(r.get("items") or 0 for r in records),
        "status": problem or status_of(records),
        "workers": records,
    }
    if all("t_start" in r and "t_end" in r for r in records):
        span = max(r["t_end"] for r in records) - min(r["t_start"] for r in records)
        out["elapsed_s"] = span
        out["pages_per_s"] = out["pages_per_s_run"] = pages / span if span > 0 else None
    if all("t_first_response" in r for r in records):
        crawl = max(r["t_last_response"] for r in records) - min(r["t_first_response"] for r in records)
        out["first_to_last_response_s"] = crawl
        out["pages_per_s_crawl"] = pages / crawl if crawl > 0 else None
        out.setdefault("pages_per_s", out["pages_per_s_crawl"])  # scrapy-redis: its workers idle at the end
    ends = [r.get("t_end", r.get("t_last_response")) for r in records]
    if records and all("t_spawn" in r for r in records) and None not in ends:
        wall = max(e for e in ends if e is not None) - min(r["t_spawn"] for r in records)
        out["spawn_to_end_s"] = wall  # start-up included: fork → the last worker's end of crawl
        out["pages_per_s_wall"] = pages / wall if wall > 0 else None
        if all("t_first_response" in r for r in records):
            out["spawn_to_first_response_s"] = max(r["t_first_response"] - r["t_spawn"] for r in records)
    listing = sorted(t for r in records for t in r.pop("t_listing", []))
    if len(listing) > 1:
        hops = [b - a for a, b in zip(listing, listing[1:], strict=False)]
        out["listing_pages"] = len(listing)
        out["listing_chain_s"] = listing[-1] - listing[0]
        out["listing_hop_ms_median"] = 1000 * statistics.median(hops)
        out["listing_hop_ms_max"] = 1000 * max(hops)  # a stall of the chain shows here
    return out


def status_of(records: list[dict[str, Any]]) -> str:
    """`ok`, or which worker failed and how."""
    bad = [r for r in records if r["rc"] != 0]
    if not bad:
        return "ok"
    return "; ".join(f"worker {r['worker']} rc={r['rc']}" for r in bad)


# ---------------------------------------------------------------- check


def check(files: list[str]) -> dict[str, Any]:
    """Union of item files against the ground truth: items, missing, duplicates, wrong."""
    truth = {}
    with open(TRUTH) as f:
        for line in f:
            d = json.loads(line)
            truth[d["url"]] = (d["title"], d["price"], d["tags"])
    seen: set[str] = set()
    emitted = duplicates = wrong = 0
    for name in files:
        if not os.path.exists(name):
            continue
        with open(name) as f:
            for line in f:
                if not line.endswith("\n"):
                    continue  # a torn last line of a killed worker
                d = json.loads(line)
                emitted += 1
                path = urlsplit(d["url"]).path
                if path in seen:
                    duplicates += 1
                seen.add(path)
                if truth.get(path) != (d.get("title"), d.get("price"), list(d.get("tags") or [])):
                    wrong += 1
    missing = len(set(truth) - seen)
    return {
        "emitted": emitted,
        "items": len(seen),
        "missing": missing,
        "duplicates": duplicates,
        "wrong": wrong,
        "ok": not (missing or wrong),
    }


def record_check(group_dir: str, files: list[str], servers_cpu: float | None = None) -> int:
    """Check `files`; add the result (and the servers' CPU seconds) to the last run record in `group_dir`."""
    result = check(files)
    runs = sorted(glob.glob(os.path.join(group_dir, "run-*.json")), key=run_number)
    runs = [r for r in runs if os.path.basename(r).count(".") == 1]
    if runs:
        with open(runs[-1]) as f:
            record = json.load(f)
        record["check"] = result
        if servers_cpu is not None:
            record["servers_cpu_s"] = servers_cpu
        with open(runs[-1], "w") as f:
            json.dump(record, f, indent=1, sort_keys=True)
    verdict = "OK" if result["ok"] else "FAIL"
    print(
        f"check {os.path.basename(group_dir)}: {result['items']} items, {result['missing']} missing, "
        f"{result['duplicates']} duplicates, {result['wrong']} wrong -> {verdict}"
    )
    return 0 if result["ok"] else 1


def run_number(path: str) -> int:
    """7 for `.../run-7.json`."""
    stem = os.path.basename(path).split(".")[0]
    return int(stem.removeprefix("run-")) if stem.removeprefix("run-").isdigit() else 0


# ---------------------------------------------------------------- summary


def load(results: str) -> dict[str, list[dict[str, Any]]]:
    """Run records per group (every run, failed ones too)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(glob.glob(os.path.join(results, "*", "run-*.json")), key=run_number):
        if os.path.basename(path).count(".") != 1:
            continue  # run-N.app.json, run-N.wK.json
        with open(path) as f:
            record = json.load(f)
        groups.setdefault(record["name"], []).append(record)
    return groups


def good(record: dict[str, Any]) -> bool:
    """A run that finished and whose items passed the check."""
    app = record.get("app") or {}
    return record.get("rc") == 0 and bool(app.get("pages_per_s")) and bool(record.get("check", {}).get("ok"))


def failure(record: dict[str, Any]) -> str:
    """Why a run does not count."""
    app = record.get("app") or {}
    if app.get("status", "ok") != "ok":
        return str(app["status"])
    if record.get("rc") != 0:
        return f"rc={record.get('rc')}"
    c = record.get("check")
    if not c:
        return "not checked"
    return f"{c['missing']} missing, {c['wrong']} wrong"


def median(values: list[float]) -> float | None:
    """The median, `None` for no values."""
    return statistics.median(values) if values else None


def figures(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over the good runs of one group, and the reasons of the others.

    With no good run, the figures of runs that ended but missed items, flagged `incomplete`: they show
    how fast the crawl went, not a result.
    """
    ok = [r for r in records if good(r)]
    incomplete = not ok
    if incomplete:
        ok = [
            r
            for r in records
            if r.get("rc") == 0 and (r.get("app") or {}).get("pages_per_s") and "check" in r
        ]
    pages = [r["app"]["pages"] for r in ok]
    return {
        "runs": len(records),
        "ok": 0 if incomplete else len(ok),
        "incomplete": incomplete and bool(ok),
        "failures": [failure(r) for r in records if not good(r)],
        "procs": (records[0].get("app") or {}).get("procs", 1) if records else 1,
        "pps": median([r["app"]["pages_per_s"] for r in ok]),
        "pps_all": [round(r["app"]["pages_per_s"], 1) for r in ok],
        "pps_run": median([r["app"]["pages_per_s_run"] for r in ok if r["app"].get("pages_per_s_run")]),
        "pps_crawl": median([r["app"].get("pages_per_s_crawl") or 0 for r in ok]),
        "cpu_ms_page": median([1000 * r["cpu_s"] / p for r, p in zip(ok, pages, strict=True) if p]),
        "servers_ms_page": median(
            [
                1000 * r["servers_cpu_s"] / p
                for r, p in zip(ok, pages, strict=True)
                if p and "servers_cpu_s" in r
            ]
        ),
        "nginx_ms_page": median(
            [
                1000 * r["nginx_cpu_s"] / p
                for r, p in zip(ok, pages, strict=True)
                if p and r.get("nginx_cpu_s")
            ]
        ),
        "pages": median(pages),
        "duplicates": median([r["check"]["duplicates"] for r in ok]),
        "chain": app_median(ok, "listing_chain_s"),
        "hop": app_median(ok, "listing_hop_ms_median"),
        "hop_max": max(
            (r["app"]["listing_hop_ms_max"] for r in ok if "listing_hop_ms_max" in r["app"]), default=None
        ),
        "steal": median([r.get("steal_pct") or 0 for r in ok]),
        "busy": median([r.get("machine_busy_pct") or 0 for r in ok]),
    }


def app_median(records: list[dict[str, Any]], key: str) -> float | None:
    """The median of one figure of the runs' merged records, over the runs that have it."""
    return median([r["app"][key] for r in records if r["app"].get(key) is not None])


def fmt(value: float | None, decimals: int = 0, suffix: str = "", *, flag: bool = False) -> str:
    """A number for the table, `–` for none; `flag` marks a figure of incomplete runs."""
    return "–" if value is None else f"{value:,.{decimals}f}{suffix}{'*' if flag else ''}"


def table(rows: dict[str, dict[str, Any]]) -> str:
    """The two markdown tables: every group, then scaling per backend."""
    memory = rows.get("memory", {}).get("pps")
    lines = [
        "| run | workers | good runs | pages/s (run span) | pages/s (first→last response) | per worker / "
        "in-memory | CPU ms/page | servers · nginx CPU ms/page | "
        "listing chain s (hop ms: median · longest) | "
        "responses | duplicate items | machine busy % | failures |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    order = ["memory", *(f"{b}_{n}w" for b in BACKENDS for n in (1, 2)), "scrapy_redis_2w"]
    for name in [*order, *sorted(set(rows) - set(order))]:
        if name not in rows:
            continue
        r = rows[name]
        per_worker = r["pps"] / r["procs"] / memory if r["pps"] and memory else None
        star = r["incomplete"]
        lines.append(
            f"| {name} | {r['procs']} | {r['ok']}/{r['runs']} | "
            f"{fmt(r['pps_run'], flag=star)} | {fmt(r['pps_crawl'], flag=star)} | "
            f"{fmt(per_worker, 2, '×', flag=star)} | {fmt(r['cpu_ms_page'], 2)} | "
            f"{fmt(r['servers_ms_page'], 2)} · {fmt(r['nginx_ms_page'], 2)} | "
            f"{fmt(r['chain'], 1)} ({fmt(r['hop'], 0)} · {fmt(r['hop_max'], 0)}) | {fmt(r['pages'])} | "
            f"{fmt(r['duplicates'])} | {fmt(r['busy'])} | {'; '.join(r['failures']) or '–'} |"
        )
    lines += [
        "",
        "| backend | 1 worker pages/s | 2 workers pages/s | scaling 2w / 1w (goal ≥ 1.7) | "
        f"ceiling of the scaling on {CORES} cores | per worker / in-memory, 1w · 2w (goal ≥ 0.7) |",
        "|---|---|---|---|---|---|",
    ]
    for backend in BACKENDS:
        r1, r2 = rows.get(f"{backend}_1w", {}), rows.get(f"{backend}_2w", {})
        one, two = r1.get("pps"), r2.get("pps")
        s1, s2 = bool(r1.get("incomplete")), bool(r2.get("incomplete"))
        scaling = two / one if one and two else None
        per1 = one / memory if one and memory else None
        per2 = two / 2 / memory if two and memory else None
        lines.append(
            f"| {backend} | {fmt(one, flag=s1)} | {fmt(two, flag=s2)} | "
            f"{fmt(scaling, 2, '×', flag=s1 or s2)} | {fmt(ceiling(r1), 2, '×')} | "
            f"{fmt(per1, 2, '×', flag=s1)} · {fmt(per2, 2, '×', flag=s2)} |"
        )
    lines.append(f"\nin-memory single process: {fmt(memory)} pages/s")
    lines.append(
        f"\nceiling: what {CORES} cores allow 2 workers over 1 if a page costs them what it costs 1 worker: "
        f"min(2, {CORES} × w / (w + s + n)), with w, s, n the 1-worker run's worker, servers and nginx CPU "
        "per page (1 worker is bound by its own core, 2 by the machine)"
    )
    if any(r.get("incomplete") for r in rows.values()):
        lines.append("\n\\* from runs that ended with items missing (see failures): a speed, not a result")
    return "\n".join(lines)


def ceiling(one_worker: dict[str, Any]) -> float | None:
    """The best 2-worker / 1-worker ratio this machine allows, from the 1-worker run's CPU per page.

    One worker is one event loop: at most one core, so 1 worker does 1/w pages per CPU-second. Two
    workers share the machine's cores with the servers and nginx, so at best CORES / (w + s + n).
    """
    w, s, n = (one_worker.get(k) for k in ("cpu_ms_page", "servers_ms_page", "nginx_ms_page"))
    if not w or s is None or n is None:
        return None
    return min(2.0, CORES * w / (w + s + n))


def summary(results: str, as_json: bool) -> int:
    """Print the tables (or JSON) of every group in `results`."""
    rows = {name: figures(records) for name, records in load(results).items()}
    if as_json:
        print(json.dumps(rows, indent=1))
    else:
        print(f"Distributed crawl benchmark from {results}: medians over good runs\n")
        print(table(rows))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Dispatch the sub-commands."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    w = sub.add_parser("workers", help="start N workers of one crawl and merge their stats")
    w.add_argument("--procs", type=int, default=2)
    w.add_argument("--timeout", type=float, default=900.0, help="kill all workers after this many seconds")
    w.add_argument("--stall", type=float, default=120.0, help="... or after this long without new output")
    w.add_argument("--watch", help="glob of the workers' output files, for --stall")
    w.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD ARGS ({k} = worker index)")
    c = sub.add_parser("check", help="check a run's item files against the ground truth")
    c.add_argument("--record", required=True, help="the group's results dir (adds the check to its last run)")
    c.add_argument(
        "--servers-cpu", type=float, help="CPU seconds the servers (broker, Redis) used in the run"
    )
    c.add_argument("files", nargs="+")
    s = sub.add_parser("summary", help="print the tables")
    s.add_argument("--results", default=os.environ.get("BENCH_RESULTS", "/tmp/benchresults"))
    s.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.command == "workers":
        cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
        if not cmd:
            ap.error("workers: no command given")
        return run_workers(args.procs, args.timeout, args.stall, args.watch, cmd)
    if args.command == "check":
        return record_check(args.record, args.files, args.servers_cpu)
    return summary(args.results, args.json)


if __name__ == "__main__":
    sys.exit(main())
