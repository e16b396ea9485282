"""The pieces of a 3-node `mocra run --cluster` crawl on 127.0.0.1, for `bench_cluster_hostile.py`.

A tree site served by a `LocalServer` that records when it served each page and holds its first
page until told; `mocra run --cluster` nodes and `raft_attacks.py` as child processes reaped with
`os.wait4` (peak RSS and CPU time); what the rest of the machine used meanwhile (`MachineCpu`);
Raft status through `mocra_cluster.node_status`; the NATS streams of a finished job deleted.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import msgspec
import nats

from mocra_cluster import ClusterError, node_status
from mocra_core.testing import ServerRequest, ServerResponse

HERE = Path(__file__).resolve().parent
NATS_URL = "nats://127.0.0.1:4222"
PASSWORD = "bench-password"
TICKS = os.sysconf("SC_CLK_TCK")
SPIDER = """
from mocra import Spider


class Tree(Spider[dict]):
    name = "tree"
    start_urls = ["BASE/p/0"]

    async def parse(self, response, ctx):
        ctx.emit({"id": int(response.url.rsplit("/", 1)[1])})
        for href in response.links():
            ctx.follow(href)
"""


# ---------------------------------------------------------------- the site


class TreeSite:
    """`/p/n` links to 2n+1, 2n+2 and n//2 (those below `pages`); records when it served each page.

    `/p/0` waits for `go` (at most `hold` seconds), so a crawl starts when the bench says.
    """

    def __init__(self, pages: int, hold: float = 120.0) -> None:
        self.pages, self.hold = pages, hold
        self.go = threading.Event()
        self.served: list[float] = []  # time.monotonic() of every page response

    def reset(self) -> None:
        """Forget the last crawl; hold `/p/0` again."""
        self.go.clear()
        self.served = []

    async def __call__(self, request: ServerRequest) -> ServerResponse:
        n = int(request.path.rsplit("/", 1)[1])
        if n >= self.pages:
            return ServerResponse(404, "no")
        if n == 0:
            await anyio.to_thread.run_sync(self.go.wait, self.hold)
        links = "".join(f'<a href="/p/{k}">{k}</a>' for k in (2 * n + 1, 2 * n + 2, n // 2) if k < self.pages)
        self.served.append(time.monotonic())
        return ServerResponse(body=f"<html><body>{links}</body></html>")


# ---------------------------------------------------------------- child processes


@dataclass
class Child:
    """A child process reaped with `os.wait4`, so its peak RSS and CPU time are known."""

    process: subprocess.Popen[bytes]
    rusage: Any = None  # resource.struct_rusage once reaped

    def poll(self) -> bool:
        """Reap the process if it has exited; whether it has."""
        if self.rusage is None:
            pid, status, rusage = os.wait4(self.process.pid, os.WNOHANG)
            if pid:
                self.process.returncode = os.waitstatus_to_exitcode(status)
                self.rusage = rusage
        return self.rusage is not None

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after `grace` seconds; reap."""
        if not self.poll():
            self.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        while not self.poll():
            if time.monotonic() > deadline:
                self.process.kill()
                deadline = float("inf")
            time.sleep(0.05)

    @property
    def cpu_s(self) -> float:
        """User + system CPU seconds (once reaped)."""
        return float(self.rusage.ru_utime + self.rusage.ru_stime)

    @property
    def peak_rss_mib(self) -> float:
        """Peak resident memory, MiB (once reaped)."""
        return float(self.rusage.ru_maxrss) / 1024


class MachineCpu:
    """CPU seconds the whole machine spent since it was made, minus this bench's own processes.

    What is left (`others_cores`) is load from other jobs: it tells a slow crawl from a busy machine.
    """

    def __init__(self) -> None:
        self._started = time.monotonic()
        self._busy = self.busy_s()
        self._mine = self.mine_s()

    @staticmethod
    def busy_s() -> float:
        """Busy CPU seconds of all cores since boot (`/proc/stat`: user, nice, system, irq, softirq)."""
        with open("/proc/stat") as stat:
            fields = [int(x) for x in stat.readline().split()[1:8]]
        user, nice, system, _idle, _iowait, irq, softirq = fields
        return (user + nice + system + irq + softirq) / TICKS

    @staticmethod
    def mine_s() -> float:
        """CPU seconds of this process (the site's thread included) and of the NATS server."""
        times = os.times()
        return times.user + times.system + sum(process_cpu_s(pid) for pid in pids_named("nats-server"))

    def others_cores(self, children: list[Child]) -> float:
        """Cores used by other processes since this was made (`children` are reaped, so counted whole)."""
        wall = time.monotonic() - self._started
        busy = self.busy_s() - self._busy
        mine = self.mine_s() - self._mine + sum(child.cpu_s for child in children if child.rusage)
        return max(busy - mine, 0.0) / wall


def pids_named(name: str) -> list[int]:
    """Processes whose command name is `name`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "comm").read_text().strip() == name:
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process `pid` so far (0 if it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


def free_addrs(count: int) -> list[str]:
    """Distinct free ports on 127.0.0.1."""
    sockets = [socket.socket() for _ in range(count)]
    for sock in sockets:
        sock.bind(("127.0.0.1", 0))
    addrs = [f"127.0.0.1:{sock.getsockname()[1]}" for sock in sockets]
    for sock in sockets:
        sock.close()
    return addrs


def start_node(root: Path, base_url: str, job: str, node: str, addr: str, voters: list[str]) -> Child:
    """Start `mocra run --cluster` as `node` of `job`, its items in `root/node.jsonl`, its log beside."""
    spider = root / "tree.py"
    spider.write_text(SPIDER.replace("BASE", base_url))
    env = {
        **os.environ,
        "MOCRA_NODE_ID": node,
        "MOCRA_CLUSTER_ADDR": addr,
        "MOCRA_DATA_DIR": str(root / node),
        "MOCRA_CLUSTER_PASSWORD": PASSWORD,
        "MOCRA_SEEDS": ",".join(voters),
    }
    argv = [sys.executable, "-m", "mocra", "run", str(spider), "-o", str(root / f"{node}.jsonl")]
    argv += ["--queue", NATS_URL, "--job", job, "--cluster", "-s", "crawl.obey_robots=false"]
    with open(root / f"{node}.log", "wb") as log:
        return Child(subprocess.Popen(argv, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT))


def start_attacker(
    attack: str, addr: str, rate: float | None, threads: int, duration: float, log: Path
) -> Child:
    """Start `raft_attacks.py` against `addr` from `threads` threads; its JSON tally goes to `log`."""
    argv = [sys.executable, str(HERE / "raft_attacks.py"), attack, addr, "--duration", str(duration)]
    argv += ["--threads", str(threads)]
    if rate is not None:
        argv += ["--rate", str(rate)]
    with open(log, "wb") as out:
        return Child(subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT))


def cluster_ready(addrs: list[str]) -> str | None:
    """The leader's address if every node sees it and is connected to both others, else None."""
    leaders = set()
    for addr in addrs:
        try:
            status = node_status(addr, password=PASSWORD, timeout=1)
        except ClusterError:
            return None
        if len(status.connected) != len(addrs) - 1 or not status.has_quorum:
            return None
        leaders.add(status.leader)
    leader = leaders.pop() if len(leaders) == 1 else None
    return leader if leader in addrs else None


def term_of(addr: str) -> int | None:
    """The Raft term `addr` is in, or None if it does not answer within 1 s."""
    try:
        return node_status(addr, password=PASSWORD, timeout=1).term
    except ClusterError:
        return None


async def delete_streams(prefix: str) -> None:
    """Delete the NATS streams of a finished job."""
    connection = await nats.connect(NATS_URL)
    try:
        jetstream = connection.jetstream()
        for info in await jetstream.streams_info():
            if info.config.name and info.config.name.startswith(prefix):
                await jetstream.delete_stream(info.config.name)
    finally:
        await connection.close()


def found_ids(path: Path) -> set[int]:
    """The page ids in one node's item file."""
    if not path.exists():
        return set()
    return {msgspec.json.decode(line)["id"] for line in path.read_bytes().splitlines() if line.endswith(b"}")}
