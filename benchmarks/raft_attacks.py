"""What a stranger without the cluster password can do to a node's Raft port: three attacks.

Shared by `bench_raft_hostile.py` (raw commit rate, attacks from threads) and
`bench_cluster_hostile.py` (a crawl's rate, the attack from a child process of its own, so its CPU
time can be told apart). Each attack runs until `stop` is set and returns its `Tally`:

* huge-prefix: announce a 2 GiB frame, then stream zeros; reconnect when dropped;
* idle: hold 200 connections that send nothing (reopen those the node closes);
* garbage: frames of random bytes, of a negative length, and signed with a wrong password, each on
  a new connection, one after another.

`Pace(rate)` bounds how many connections an attack opens per second (`None`: flat out, as fast as
the node drops them). Traffic goes only where `addr` points; the CLI accepts only 127.0.0.1.

Run one attack alone (until SIGTERM, SIGINT or `--duration`; prints its tally as JSON on exit), from
`--threads` threads side by side, `--rate` shared among them:

    uv run python benchmarks/raft_attacks.py garbage 127.0.0.1:7100 --rate 50 --duration 30
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import struct
import sys
import threading
import time
import zlib
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from pysyncobj import pickle  # type: ignore[import-untyped]

from mocra_cluster._raft_auth import MessageAuthenticator

if TYPE_CHECKING:
    from collections.abc import Callable

IDLE_CONNECTIONS = 200
"""How many silent connections the idle attack holds."""


@dataclass
class Tally:
    """What one attack did: connections it opened, and how many of them the node closed."""

    connections: int = 0
    dropped: int = 0

    def __iadd__(self, other: Tally) -> Tally:
        self.connections += other.connections
        self.dropped += other.dropped
        return self


class Pace:
    """At most `rate` new connections per second (`None`: no limit), spread evenly."""

    def __init__(self, rate: float | None = None) -> None:
        if rate is not None and rate <= 0:
            raise ValueError(f"rate: expected connections per second > 0 or None, got {rate!r}")
        self._interval = 0.0 if rate is None else 1.0 / rate
        self._next = time.monotonic()

    def ready(self) -> bool:
        """Whether a connection may be opened now (and, if so, take its slot)."""
        now = time.monotonic()
        if now < self._next:
            return False
        self._next = max(self._next + self._interval, now - 1.0)  # no burst after a pause longer than 1 s
        return True

    def wait(self, stop: threading.Event) -> bool:
        """Wait for the next slot; False if `stop` was set first."""
        while not self.ready():
            if stop.wait(min(self._next - time.monotonic(), 0.1)):
                return False
        return not stop.is_set()


def connect(addr: str) -> socket.socket:
    """A blocking connection to `addr` with a short timeout."""
    host, _, port = addr.rpartition(":")
    sock = socket.create_connection((host, int(port)), timeout=1)
    sock.settimeout(0.2)
    return sock


def is_closed(sock: socket.socket) -> bool:
    """Whether the peer closed `sock`."""
    try:
        return sock.recv(1 << 16, socket.MSG_DONTWAIT | socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def until_closed(sock: socket.socket, stop: threading.Event, send: bytes = b"") -> bool:
    """Send `send` repeatedly (or nothing) until the peer closes `sock`; False if stopped first."""
    while not stop.is_set():
        if send:
            try:
                sock.send(send)
            except TimeoutError:
                pass
            except OSError:
                return True
        elif stop.wait(0.005):
            break
        if is_closed(sock):
            return True
    return False


def huge_prefix(addr: str, stop: threading.Event, pace: Pace | None = None) -> Tally:
    """Announce 2 GiB frames and stream zeros, reconnecting."""
    pace, tally, zeros = pace or Pace(), Tally(), bytes(1 << 16)
    while pace.wait(stop):
        try:
            with connect(addr) as sock:
                tally.connections += 1
                sock.sendall(struct.pack("i", 2**31 - 1))
                tally.dropped += until_closed(sock, stop, zeros)
        except OSError:
            continue
    return tally


def idle(addr: str, stop: threading.Event, pace: Pace | None = None, count: int = IDLE_CONNECTIONS) -> Tally:
    """Hold `count` silent connections, reopening those closed."""
    pace, tally = pace or Pace(), Tally()
    held: list[socket.socket] = []
    try:
        while not stop.is_set():
            for sock in [sock for sock in held if is_closed(sock)]:
                held.remove(sock)
                sock.close()
                tally.dropped += 1
            while len(held) < count and not stop.is_set() and pace.ready():
                try:
                    held.append(connect(addr))
                    tally.connections += 1
                except OSError:  # the node's accept queue is full: try again next time
                    break
            stop.wait(0.02)
    finally:
        for sock in held:
            sock.close()
    return tally


def garbage_frames() -> list[bytes]:
    """A frame of random bytes, one of a negative length, and one signed with a wrong password."""
    signed = zlib.compress(pickle.dumps(os.urandom(32)), 3)
    wrong = MessageAuthenticator("a-guess").encrypt_at_time(signed, int(time.monotonic()))
    return [
        struct.pack("i", 200) + os.urandom(200),
        struct.pack("i", -5) + os.urandom(64),
        struct.pack("i", len(wrong)) + wrong,
    ]


def garbage(addr: str, stop: threading.Event, pace: Pace | None = None) -> Tally:
    """Send garbage and wrongly signed frames, one per connection."""
    pace, tally, frames = pace or Pace(), Tally(), garbage_frames()
    while pace.wait(stop):
        try:
            with connect(addr) as sock:
                tally.connections += 1
                sock.sendall(frames[tally.connections % len(frames)])
                tally.dropped += until_closed(sock, stop)
        except OSError:
            continue
    return tally


ATTACKS: dict[str, Callable[[str, threading.Event, Pace | None], Tally]] = {
    "huge-prefix": huge_prefix,
    "idle": idle,
    "garbage": garbage,
}


def main(argv: list[str] | None = None) -> int:
    """Run one attack until SIGTERM/SIGINT or `--duration`; print its tally and CPU seconds as JSON."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("attack", choices=sorted(ATTACKS))
    ap.add_argument("addr", help="127.0.0.1:PORT of the node's Raft port")
    ap.add_argument("--rate", type=float, help="new connections per second at most, over all threads")
    ap.add_argument("--threads", type=int, default=1, help="attackers side by side (1-64)")
    ap.add_argument("--duration", type=float, default=600.0, help="stop after this many seconds")
    args = ap.parse_args(argv)
    if args.addr.rpartition(":")[0] != "127.0.0.1":
        ap.error(f"addr: expected 127.0.0.1:PORT (attacks stay on this machine), got {args.addr!r}")
    if args.rate is not None and args.rate <= 0:
        ap.error(f"--rate: expected connections per second > 0, got {args.rate:g}")
    if not 1 <= args.threads <= 64:
        ap.error(f"--threads: expected 1 to 64, got {args.threads}")
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    rate = None if args.rate is None else args.rate / args.threads
    tallies: list[Tally] = []
    threads = [
        threading.Thread(
            target=lambda: tallies.append(ATTACKS[args.attack](args.addr, stop, Pace(rate))), daemon=True
        )
        for _ in range(args.threads)
    ]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    stop.wait(args.duration)
    stop.set()
    for thread in threads:
        thread.join(5)
    total = Tally()
    for tally in tallies:
        total += tally
    times = os.times()
    result = {"attack": args.attack, "rate": args.rate, "threads": args.threads, **asdict(total)}
    result |= {"wall_s": time.monotonic() - started, "cpu_s": times.user + times.system}
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
