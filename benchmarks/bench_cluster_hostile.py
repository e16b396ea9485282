"""Measure a 3-node `mocra run --cluster` crawl's rate while a stranger attacks one node's Raft port.

Run: `uv run python benchmarks/bench_cluster_hostile.py` (options: `--pages 12000 --rounds 3 --rate 50`;
NATS with JetStream on 127.0.0.1:4222).

Every crawl is a fresh job: three `mocra run --cluster` processes (initial voters of one Raft
cluster, `--queue nats://127.0.0.1:4222`, defaults but `crawl.obey_robots=false`) crawl a tree of
`--pages` pages served by a `LocalServer` in a thread of this process (`/p/n` links to 2n+1, 2n+2
and n//2). The site holds its first page until the cluster has a leader and every node is connected,
and, in an attacked crawl, until the attack has run for 0.5 s: the whole crawl runs under it. The
attack (`raft_attacks.py`, a child process of its own) aims at the Raft port of the node that led
then, flat out or at `--rate` connections per second at most, until the three nodes have exited.

One round: no attack, each attack flat out, each at `--rate`, no attack again (the attacks in reverse
order in even rounds). For each crawl: pages/s from the site's first to its last response; its ratio
to the geometric mean of the round's two crawls without attack (so drift over a round cancels); the
attacked node's peak RSS (`ru_maxrss`, its `VmHWM` at exit) and CPU seconds; the attacker's CPU
seconds (~0.3 s of it is its start) and share of one core over its run; the connections it opened
and how many the node closed; how many Raft terms passed during the crawl (an election each); pages
missing from the union of the nodes' items (must be 0); the cores other jobs used meanwhile (the
machine's busy time from `/proc/stat` minus this bench's processes and the NATS server's: a high
figure there, not the attack, may explain a slow crawl); and how often a follower logged that it
truncated log entries it had already applied (pysyncobj, CRITICAL: a resent append, see the README).
Medians over the rounds at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from cluster_nodes import (
    Child,
    MachineCpu,
    TreeSite,
    cluster_ready,
    delete_streams,
    found_ids,
    free_addrs,
    start_attacker,
    start_node,
    term_of,
)

from mocra_core.testing import LocalServer

ATTACKS = ("huge-prefix", "idle", "garbage")
TRUNCATION = "truncating already-applied log entries"
"""What pysyncobj logs (CRITICAL) when a follower drops entries it applied to take a resent append."""
STOP = threading.Event()
"""Set by SIGINT or SIGTERM: the crawl under way stops its children, and no other starts."""


def say(line: str) -> None:
    """Print one line of the report."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


# ---------------------------------------------------------------- one crawl


@dataclass
class Crawl:
    """What one crawl measured (see the module docstring)."""

    attack: str
    rate: float | None
    pages_per_s: float = 0.0
    span_s: float = 0.0
    node_rss_mib: float = 0.0
    node_cpu_s: float = 0.0
    attacker_cpu_s: float = 0.0
    attacker_core_share: float = 0.0
    connections: int = 0
    dropped: int = 0
    terms: int = 0
    missing: int = 0
    others_cores: float = 0.0
    truncations: int = 0
    problem: str = ""
    exit_codes: list[int | None] = field(default_factory=list)

    @property
    def name(self) -> str:
        """`none`, the attack's name, or `name@rate`."""
        return self.attack if self.rate is None else f"{self.attack}@{self.rate:g}"


def crawl(
    site: TreeSite, base_url: str, attack: str, rate: float | None, threads: int, timeout: float
) -> Crawl:
    """Run one 3-node crawl of `site`, under `attack` (or `none`) aimed at the leader's Raft port."""
    result = Crawl(attack, rate)
    site.reset()
    job = f"hostile{uuid.uuid4().hex[:10]}"
    addrs = free_addrs(3)
    machine = MachineCpu()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        nodes = [start_node(root, base_url, job, f"n{i}", addr, addrs) for i, addr in enumerate(addrs)]
        attacker: Child | None = None
        try:
            leader = wait_for_leader(nodes, addrs, time.monotonic() + min(timeout, 60))
            if leader is None:
                result.problem = "the cluster did not form"
                return result
            target = nodes[addrs.index(leader)]
            if attack != "none":
                attacker = start_attacker(attack, leader, rate, threads, timeout, root / "attacker.json")
                time.sleep(0.5)  # the attack is under way
            site.go.set()
            witness = next(addr for addr in addrs if addr != leader)  # asked for the term, not attacked
            result.terms = watch_terms(nodes, target, witness, time.monotonic() + timeout)
            if not all(n.poll() for n in nodes):
                result.problem = "interrupted" if STOP.is_set() else f"timeout after {timeout:.0f} s"
        finally:
            for child in [*nodes, *([attacker] if attacker else [])]:
                child.stop()
            anyio.run(delete_streams, f"mocra-{job}")
        result.others_cores = machine.others_cores([*nodes, *([attacker] if attacker else [])])
        collect(result, site, root, nodes, target, attacker)
    return result


def wait_for_leader(nodes: list[Child], addrs: list[str], deadline: float) -> str | None:
    """The leader's address once every node sees it and both others (None: a node died, or too late)."""
    while time.monotonic() < deadline and not STOP.is_set() and not any(n.poll() for n in nodes):
        time.sleep(0.2)
        leader = cluster_ready(addrs)
        if leader is not None:
            return leader
    return None


def watch_terms(nodes: list[Child], target: Child, witness: str, deadline: float) -> int:
    """Wait for the nodes to exit; how many Raft terms `witness` went through meanwhile."""
    first = last = term_of(witness) or 0
    asked = time.monotonic()
    while not all(n.poll() for n in nodes) and time.monotonic() < deadline and not STOP.is_set():
        time.sleep(0.1)
        if time.monotonic() - asked > 1 and not target.poll():
            last, asked = term_of(witness) or last, time.monotonic()
    return last - first


def collect(
    result: Crawl, site: TreeSite, root: Path, nodes: list[Child], target: Child, attacker: Child | None
) -> None:
    """Fill `result` in from the site, the nodes' items and the children's resource use."""
    result.exit_codes = [n.process.returncode for n in nodes]
    if any(result.exit_codes) and not result.problem:
        result.problem = "exit codes " + ",".join(map(str, result.exit_codes))
    if result.problem:
        say(f"!! {result.name}: {result.problem}; log tail of n0:\n" + (root / "n0.log").read_text()[-2000:])
    served = site.served
    if len(served) > 1:
        result.span_s = served[-1] - served[0]
        result.pages_per_s = len(served) / result.span_s
    result.node_rss_mib, result.node_cpu_s = target.peak_rss_mib, target.cpu_s
    result.missing = site.pages - len(set().union(*(found_ids(root / f"n{i}.jsonl") for i in range(3))))
    result.truncations = sum((root / f"n{i}.log").read_text().count(TRUNCATION) for i in range(3))
    if attacker is not None:
        tally = json.loads((root / "attacker.json").read_text().strip().splitlines()[-1])
        result.connections, result.dropped = tally["connections"], tally["dropped"]
        result.attacker_cpu_s = attacker.cpu_s
        result.attacker_core_share = attacker.cpu_s / tally["wall_s"] if tally["wall_s"] else 0.0


# ---------------------------------------------------------------- the report


HEADER = (
    f"{'round':>5} {'attack':<15} {'pages/s':>8} {'ratio':>6} {'span s':>7} {'node RSS':>9} {'node CPU':>9} "
    f"{'attacker CPU':>13} {'conns':>7} {'dropped':>7} {'terms':>5} {'missing':>7} {'others':>6} {'trunc':>5}"
)


def row(round_: int | str, crawl: Crawl, ratio: float) -> str:
    """One line of the table."""
    attacker = (
        "–" if crawl.attack == "none" else f"{crawl.attacker_cpu_s:.1f}s {crawl.attacker_core_share:>4.0%}"
    )
    return (
        f"{round_:>5} {crawl.name:<15} {crawl.pages_per_s:>8.0f} {ratio:>6.2f} {crawl.span_s:>7.1f} "
        f"{crawl.node_rss_mib:>5.0f} MiB {crawl.node_cpu_s:>7.1f} s {attacker:>13} {crawl.connections:>7} "
        f"{crawl.dropped:>7} {crawl.terms:>5} {crawl.missing:>7} {crawl.others_cores:>6.2f} "
        f"{crawl.truncations:>5}"
    )


def phases(rate: float, round_: int) -> list[tuple[str, float | None]]:
    """One round's crawls: none, each attack flat out and at `rate`, none again; reversed in even rounds."""
    attacked: list[tuple[str, float | None]] = [(a, None) for a in ATTACKS] + [(a, rate) for a in ATTACKS]
    if round_ % 2 == 0:
        attacked.reverse()
    return [("none", None), *attacked, ("none", None)]


def median_of(crawls: list[Crawl], key: str) -> float:
    """The median of one figure over `crawls`."""
    return float(statistics.median(getattr(crawl, key) for crawl in crawls))


def summary(crawls: dict[str, list[tuple[Crawl, float]]]) -> list[str]:
    """The markdown table of medians over the rounds."""
    lines = [
        "| attack | pages/s | ratio to no attack | attacked node peak RSS MiB (max) | attacked node CPU s "
        "| attacker CPU s (share of a core) | connections · dropped | terms | missing | other jobs (cores) "
        "| log truncations |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, runs in crawls.items():
        crawled = [c for c, _ in runs]
        ratio = statistics.median(r for _, r in runs)
        cpu, share = median_of(crawled, "attacker_cpu_s"), median_of(crawled, "attacker_core_share")
        attacker = "–" if name.startswith("none") else f"{cpu:.1f} ({share:.0%})"
        lines.append(
            f"| {name} | {median_of(crawled, 'pages_per_s'):,.0f} | {ratio:.2f} | "
            f"{median_of(crawled, 'node_rss_mib'):.0f} ({max(c.node_rss_mib for c in crawled):.0f}) | "
            f"{median_of(crawled, 'node_cpu_s'):.1f} | {attacker} | "
            f"{median_of(crawled, 'connections'):,.0f} · {median_of(crawled, 'dropped'):,.0f} | "
            f"{sum(c.terms for c in crawled)} | {sum(c.missing for c in crawled)} | "
            f"{median_of(crawled, 'others_cores'):.2f} | {median_of(crawled, 'truncations'):.0f} |"
        )
    return lines


def run_round(site: TreeSite, base_url: str, round_: int, args: argparse.Namespace) -> list[Crawl]:
    """One round's crawls (a progress line each on stderr); fewer if stopped."""
    done: list[Crawl] = []
    for attack, rate in phases(args.rate, round_):
        if STOP.is_set():
            break
        done.append(crawl(site, base_url, attack, rate, args.threads, args.timeout))
        sys.stderr.write(f"round {round_}: {done[-1].name} {done[-1].pages_per_s:.0f} pages/s\n")
    return done


def main(args: argparse.Namespace) -> int:
    """Run the rounds and print the table."""
    site = TreeSite(args.pages)
    server = LocalServer(fallback=site)
    crawls: dict[str, list[tuple[Crawl, float]]] = {}
    failed = 0
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: STOP.set())
    with server.run_in_thread() as base_url:
        say(
            f"3 `mocra run --cluster` nodes over NATS crawl {args.pages} pages; the attack ({args.threads} "
            f"threads) aims at the leader's Raft port, flat out or at {args.rate:g} connections/s in all; "
            f"{os.cpu_count()} cores; ratio: to the geometric mean of the round's crawls without attack"
        )
        say(HEADER)
        for round_ in range(1, args.rounds + 1):
            done = run_round(site, base_url, round_, args)
            calm = [c.pages_per_s for c in done if c.attack == "none" and not c.problem]
            baseline = statistics.geometric_mean(calm) if calm else float("nan")
            for index, measured in enumerate(done):
                ratio = measured.pages_per_s / baseline
                say(row(round_, measured, ratio))
                if measured.problem:  # reported above, left out of the medians
                    failed += 1
                    continue
                name = "none again" if index and measured.attack == "none" else measured.name
                crawls.setdefault(name, []).append((measured, ratio))
    say(f"\nmedians of good crawls, {failed} failed (terms and missing: summed):")
    for line in summary(crawls):
        say(line)
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {name: [vars(c) | {"ratio": r} for c, r in runs] for name, runs in crawls.items()}, indent=1
            )
        )
    return 1 if failed else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=12000, help="pages in the site's tree")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rate", type=float, default=50.0, help="the bounded attack: connections per second")
    parser.add_argument("--threads", type=int, default=4, help="attacker threads (the rate is their total)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds before one crawl is stopped")
    parser.add_argument("--json", help="also write every crawl's figures to this file")
    sys.exit(main(parser.parse_args()))
