"""LocalControlPlane across real OS processes: restarts, lock contention, fencing of a stale holder."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import time

from mocra_cluster import FencedResource, StaleToken

PRELUDE = """
import sys, time
import anyio
from mocra_cluster import Liveness, LocalControlPlane
path = sys.argv[1]
"""


def run(code: str, *args: str) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-c", PRELUDE + code, *args], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def start(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", PRELUDE + code, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_restart_keeps_values_locks_and_the_fencing_counter(tmp_path: pathlib.Path) -> None:
    first = run(
        """
async def main():
    async with LocalControlPlane(path) as plane:
        await plane.set("config", b"v1")
        print(await plane.acquire_lock("job", "first", ttl=600))
        print(await plane.acquire_lock("other", "first", ttl=600))
        print(await plane.publish("events", b"hello"))
anyio.run(main)
""",
        str(tmp_path),
    )
    assert first == ["1", "2", "1"]
    second = run(
        """
async def main():
    quiet = Liveness(heartbeat_interval=600, member_ttl=1200)  # no heartbeat among the counted commands
    async with LocalControlPlane(path, liveness=quiet) as plane:
        print((await plane.get("config")).decode())
        print((await plane.lock_holder("job")).holder)
        print(await plane.acquire_lock("job", "second", ttl=600))  # still held by "first"
        print(await plane.acquire_lock("third", "second", ttl=600))  # the counter went on
        print(await plane.publish("events", b"again"))
        print((await plane.status()).applied_index)
anyio.run(main)
""",
        str(tmp_path),
    )
    assert second == ["v1", "first", "None", "3", "2", "9"]  # 2 joins + 7 writes


CONTENDER = """
holder, rounds = sys.argv[2], int(sys.argv[3])
async def main():
    async with LocalControlPlane(path, member_id=holder) as plane:
        sys.stdin.readline()  # start together
        tokens = []
        while len(tokens) < rounds:
            token = await plane.acquire_lock("shared", holder, ttl=30)
            if token is None:
                await anyio.sleep(0.001)
                continue
            # inside the critical section: nobody else may be in it
            assert await plane.compare_and_set("inside", None, holder.encode()), "two holders at once"
            await anyio.sleep(0.002)
            assert await plane.compare_and_set("inside", holder.encode(), None), "two holders at once"
            assert await plane.release_lock("shared", holder, token)
            tokens.append(token)
            await anyio.sleep(0.003)  # give the other a turn
        print(*tokens)
anyio.run(main)
"""


def test_two_processes_contending_for_one_lock(tmp_path: pathlib.Path) -> None:
    procs = [start(CONTENDER, str(tmp_path), name, "40") for name in ("a", "b")]
    time.sleep(0.5)  # let them import and open the directory
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        outputs.append([int(token) for token in out.split()])
    a, b = outputs
    assert len(a) == len(b) == 40
    assert a == sorted(a) and b == sorted(b)  # each holder's tokens strictly increase
    assert len(set(a) | set(b)) == 80  # and no token was ever handed out twice
    assert sorted(a + b) == list(range(1, 81))
    assert max(a[0], b[0]) < min(a[-1], b[-1])  # they really contended: their turns interleaved


FIRST_WINS = """
async def main():
    async with LocalControlPlane(path) as plane:
        sys.stdin.readline()  # start together
        print(await plane.acquire_lock("once", sys.argv[2], ttl=600))
anyio.run(main)
"""


def test_exactly_one_of_several_processes_gets_the_lock(tmp_path: pathlib.Path) -> None:
    procs = [start(FIRST_WINS, str(tmp_path), f"p{i}") for i in range(4)]
    time.sleep(0.5)  # let them import and open the directory
    results = []
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        results.append(out.strip())
    assert sorted(results) == ["1", "None", "None", "None"]


STALE_HOLDER = """
async def main():
    async with LocalControlPlane(path) as plane:
        token = await plane.acquire_lock("writer", "slow", ttl=0.3)
        print("token", token, flush=True)
        sys.stdin.readline()  # paused (a GC pause, a partition) well past the lease
        print("renewed", await plane.renew_lock("writer", "slow", token, ttl=0.3), flush=True)
        print("write", token, flush=True)  # it still tries its write
anyio.run(main)
"""

SUCCESSOR = """
async def main():
    async with LocalControlPlane(path) as plane:
        print(await plane.acquire_lock("writer", "fast", ttl=30))
anyio.run(main)
"""


def test_a_holder_whose_lease_expired_is_fenced(tmp_path: pathlib.Path) -> None:
    storage = FencedResource(b"")  # the target both holders write to
    slow = start(STALE_HOLDER, str(tmp_path))
    assert slow.stdout is not None and slow.stdin is not None
    label, slow_token = slow.stdout.readline().split()
    assert label == "token"
    storage.write(int(slow_token), b"slow's first write")  # accepted while its lease holds
    time.sleep(0.4)  # the lease lapses
    [fast_token] = run(SUCCESSOR, str(tmp_path))
    assert int(fast_token) > int(slow_token)
    storage.write(int(fast_token), b"fast's write")

    slow.stdin.write("wake up\n")
    slow.stdin.flush()
    out, err = slow.communicate(timeout=60)
    assert slow.returncode == 0, err
    assert out.split() == ["renewed", "False", "write", slow_token]
    try:
        storage.write(int(slow_token), b"slow's late write")
    except StaleToken as exc:
        assert (exc.token, exc.highest) == (int(slow_token), int(fast_token))
    else:
        raise AssertionError("the stale holder's write was accepted")
    assert storage.value == b"fast's write"
