"""Local forward proxies in processes of their own, for `bench_proxy_crawl.py`, and CPU figures from `/proc`.

Two kinds, one interface (`urls`, `begin()`, `stop()` → one report per proxy):

- `ForwardProxies`: `mocra_proxy.testing.ForwardProxy`, one Python process each (this file run as a
  script: it prints its port, then on a line on stdin a JSON report of the requests it carried);
- `ProxyPyProxies`: proxy.py (PyPI `proxy.py`, a benchmark-only install in a venv of its own, never a
  project dependency: `python3 -m venv /tmp/proxypy-venv && /tmp/proxypy-venv/bin/pip install proxy.py`;
  `$PROXYPY_VENV` names another venv), one acceptor and one worker each, counting requests with the
  plugin in `proxypy_counter.py`; it keeps client connections alive, which ForwardProxy does not.

A report has `port`, `cpu_s` (the proxy's process tree, from `begin()` to `stop()`) and `requests` (what it
forwarded); ForwardProxy's also `statuses` (its answers, counted) and `first_at`/`last_at`.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
NGINX_PID = Path("/tmp/benchnginx/nginx.pid")
PROXYPY = Path(os.environ.get("PROXYPY_VENV", "/tmp/proxypy-venv"), "bin", "proxy")
PLUGIN = "proxypy_counter.RequestCounter"  # benchmarks/proxypy_counter.py


def tree(pid: int) -> list[int]:
    """`pid` and its descendants (threads' children included)."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                todo += [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
    return found


def cpu_s(pids: list[int]) -> float:
    """CPU seconds (user + system) of the live processes `pids`."""
    total = 0.0
    for p in pids:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def nginx_cpu() -> float | None:
    """CPU seconds of the bench nginx (master and workers), or None when it is not running."""
    try:
        pid = int(NGINX_PID.read_text().strip())
    except (OSError, ValueError):
        return None
    return cpu_s(tree(pid)) if Path(f"/proc/{pid}").exists() else None


def busy_s() -> tuple[float, float]:
    """(CPU seconds the whole machine was busy, wall seconds) since boot, from `/proc/stat` and `time`."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:8]]  # user nice system idle iowait irq softirq
    busy = sum(ticks) - ticks[3] - ticks[4]
    return busy / os.sysconf("SC_CLK_TCK"), time.monotonic()


class _Proxies:
    """Proxy processes: started on entry, measured from `begin()` to `stop()`, killed on exit if still up."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.procs: list[subprocess.Popen[str]] = []
        self.ports: list[int] = []
        self._start: list[float] = []

    @property
    def urls(self) -> list[str]:
        """The proxies' URLs."""
        return [f"http://127.0.0.1:{port}" for port in self.ports]

    def begin(self) -> None:
        """Start measuring (call once every proxy listens, just before the crawl)."""
        self._start = [cpu_s(tree(p.pid)) for p in self.procs]

    def _measure(self) -> list[dict[str, Any]]:
        return [
            {"port": port, "cpu_s": cpu_s(tree(proc.pid)) - cpu0}
            for proc, port, cpu0 in zip(self.procs, self.ports, self._start, strict=True)
        ]

    def __enter__(self) -> _Proxies:
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


class ForwardProxies(_Proxies):
    """`count` `ForwardProxy` processes."""

    name = "ForwardProxy"

    def __enter__(self) -> ForwardProxies:
        cmd = [sys.executable, str(Path(__file__).resolve())]
        self.procs = [
            subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            for _ in range(self.count)
        ]
        self.ports = [int(proc.stdout.readline()) for proc in self.procs if proc.stdout is not None]
        return self

    def stop(self) -> list[dict[str, Any]]:
        """Stop every proxy; their reports, in port order."""
        reports = self._measure()
        for proc in self.procs:
            assert proc.stdin is not None
            proc.stdin.write("stop\n")
            proc.stdin.flush()
        for report, proc in zip(reports, self.procs, strict=True):
            assert proc.stdout is not None
            report.update(json.loads(proc.stdout.readline()))
            proc.wait(timeout=30)
        return reports


class ProxyPyProxies(_Proxies):
    """`count` proxy.py processes (`binary`: its `proxy` script), one acceptor and one worker each."""

    name = "proxy.py"

    def __init__(self, count: int, binary: Path = PROXYPY) -> None:
        super().__init__(count)
        self.binary = binary
        self._counts = tempfile.TemporaryDirectory(prefix="proxypy_counts_")

    def __enter__(self) -> ProxyPyProxies:
        if not self.binary.exists():
            raise SystemExit(f"no proxy.py at {self.binary}: pip install proxy.py into a venv of its own")
        for _ in range(self.count):
            with socket.socket() as s:  # a free port (proxy.py has no "any port" that it reports back)
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            cmd = [str(self.binary), "--hostname", "127.0.0.1", "--port", str(port), "--log-level", "WARNING"]
            cmd += ["--num-acceptors", "1", "--num-workers", "1", "--plugins", PLUGIN]
            env = dict(os.environ, PYTHONPATH=str(HERE), PROXYPY_COUNT_DIR=f"{self._counts.name}/{port}")
            os.mkdir(env["PROXYPY_COUNT_DIR"])
            quiet = subprocess.DEVNULL
            self.procs.append(subprocess.Popen(cmd, env=env, stdout=quiet, stderr=quiet, text=True))
            self.ports.append(port)
        for port in self.ports:
            _wait_listening(port)
        time.sleep(0.5)  # its worker process may come up after the acceptor listens
        return self

    def stop(self) -> list[dict[str, Any]]:
        """Stop every proxy; their reports, in port order."""
        reports = self._measure()
        time.sleep(0.5)  # the last counts are written as the crawler's connections close
        for report in reports:
            files = Path(self._counts.name, str(report["port"])).iterdir()
            report["requests"] = sum(int(f.read_text() or 0) for f in files)
        for proc in self.procs:
            proc.send_signal(signal.SIGINT)
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._counts.cleanup()
        return reports


def _wait_listening(port: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


async def _serve_forward_proxy() -> None:
    """Run a `ForwardProxy` until a line (or EOF) on stdin; print its port, then its report as JSON."""
    import anyio.to_thread

    from mocra_proxy.testing import ForwardProxy

    proxy = ForwardProxy()
    async with proxy.running():
        print(proxy.port, flush=True)
        await anyio.to_thread.run_sync(sys.stdin.readline)
    at = [s.at for s in proxy.seen]
    report = {
        "requests": len(proxy.seen),
        "statuses": dict(Counter(str(s.status) for s in proxy.seen)),
        "first_at": min(at, default=None),
        "last_at": max(at, default=None),
    }
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    import anyio

    anyio.run(_serve_forward_proxy)
