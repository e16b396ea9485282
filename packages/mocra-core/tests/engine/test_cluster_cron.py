"""Cron on a cluster: two real processes sharing one LMDB control plane fire each account exactly once,
and when one is killed the survivor takes over its accounts once the dead member's TTL has passed."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections import Counter
from typing import TYPE_CHECKING

import pytest

from mocra_cluster import owner, partition_of

if TYPE_CHECKING:
    import pathlib

ACCOUNTS = [f"acct-{i}" for i in range(10)]
FIRES = 5
MEMBERS = ("node-a", "node-b")

NODE = textwrap.dedent(
    """
    import math, sys, time
    from typing import Any

    import anyio
    from mocra_cluster import Liveness, LocalControlPlane

    from mocra_core.config import Settings
    from mocra_core.coordination import ControlPlaneOwnership
    from mocra_core.engine import Engine
    from mocra_core.middleware import MiddlewareChain
    from mocra_core.modules import Account, Module, Node, TaskCtx, compile_module

    plane_dir, store_dir, member, out_path, fires, ttl = sys.argv[1:]
    liveness = Liveness(heartbeat_interval=float(ttl) / 5, member_ttl=float(ttl))


    class Tick(Node[Any]):
        id = "tick"

        async def generate(self, ctx: TaskCtx[Any]) -> None:
            with open(out_path, "a") as out:
                out.write(f"{ctx.account}\\t{ctx.task.run}\\n")


    class Accounts(Module[Any]):
        name = "accounts"
        accounts = tuple(Account(name=f"acct-{i}") for i in range(10))
        cron = "*/1 * * * * *"

        def nodes(self) -> Any:
            return [Tick()]


    async def main() -> None:
        settings = Settings.from_mapping(
            {"crawl": {"cron_max_fires": int(fires)}, "coordination": {"url": f"lmdb://{store_dir}"}}
        )
        async with LocalControlPlane(plane_dir, member_id=member, sync=False, liveness=liveness) as plane:
            while len(await plane.members()) < 2:  # both nodes joined: ownership is split from the start
                await anyio.sleep(0.05)
            # the first node to get here picks a whole second both engines start before
            await plane.compare_and_set("test/start", None, str(math.ceil(time.time()) + 2).encode())
            await anyio.sleep(max(0.0, float(await plane.get("test/start") or 0) - time.time()))
            engine = Engine(
                [(compile_module(Accounts()), None)], settings, MiddlewareChain(), {},
                ownership=ControlPlaneOwnership(plane),
            )
            result = await engine.run()
        print(result.reason)


    anyio.run(main)
    """
)


def start_nodes(tmp_path: pathlib.Path, fires: int, ttl: float) -> list[subprocess.Popen[str]]:
    script = tmp_path / "node.py"
    script.write_text(NODE)
    return [
        subprocess.Popen(
            [
                sys.executable,
                str(script),
                str(tmp_path / "plane"),
                str(tmp_path / "store"),
                member,
                str(tmp_path / f"{member}.tsv"),
                str(fires),
                str(ttl),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for member in MEMBERS
    ]


def fired(path: pathlib.Path) -> list[tuple[str, str]]:
    """(account, fire) of every start task a node ran."""
    if not path.exists():
        return []
    found = []
    for line in path.read_text().splitlines():
        account, run = line.split("\t")
        assert run.startswith(f"accounts:{account}:cron"), run
        found.append((account, run.rpartition(":cron")[2]))
    return found


@pytest.mark.slow
def test_two_nodes_running_cron_schedule_each_account_exactly_once(tmp_path: pathlib.Path) -> None:
    owners = Counter(owner(partition_of(f"accounts:{a}"), MEMBERS) for a in ACCOUNTS)
    assert set(owners) == set(MEMBERS)  # the ids split the accounts, so both nodes must fire some
    outputs = {member: tmp_path / f"{member}.tsv" for member in MEMBERS}
    nodes = start_nodes(tmp_path, FIRES, ttl=5.0)
    for node in nodes:
        out, err = node.communicate(timeout=30)
        assert node.returncode == 0, err[-3000:]
        assert out.strip() == "finished"

    runs = {
        member: [tuple(line.split("\t")) for line in path.read_text().splitlines()]
        for member, path in outputs.items()
    }
    per_fire: Counter[tuple[str, str]] = Counter()
    for lines in runs.values():
        for account, run in lines:
            assert run.startswith(f"accounts:{account}:cron"), run
            per_fire[(account, run.rpartition(":cron")[2])] += 1
    assert set(per_fire.values()) == {1}, [k for k, n in per_fire.items() if n > 1]  # never twice
    fires = sorted({fire for _, fire in per_fire})
    assert FIRES <= len(fires) <= FIRES + 1  # both nodes fired the same seconds (at most one apart)
    common = fires[1:-1] if len(fires) > FIRES else fires
    for fire in common:  # every account, every fire both nodes took part in
        assert {a for a, f in per_fire if f == fire} == set(ACCOUNTS), fire
    for member, lines in runs.items():  # each node fired exactly the accounts it owns
        mine = {a for a in ACCOUNTS if owner(partition_of(f"accounts:{a}"), MEMBERS) == member}
        assert {a for a, _ in lines} == mine


@pytest.mark.slow
def test_when_a_node_is_killed_the_survivor_fires_every_account(tmp_path: pathlib.Path) -> None:
    ttl, fires = 1.0, 9
    survivor, victim = start_nodes(tmp_path, fires, ttl)
    deadline = time.monotonic() + 20
    while len({fire for _, fire in fired(tmp_path / "node-b.tsv")}) < 2:  # node-b fired twice
        assert victim.poll() is None and survivor.poll() is None, victim.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "node-b fired nothing"
        time.sleep(0.05)
    victim.kill()
    killed = time.time()
    victim.communicate()
    out, err = survivor.communicate(timeout=30)
    assert survivor.returncode == 0, err[-3000:]
    assert out.strip() == "finished"

    by_a, by_b = fired(tmp_path / "node-a.tsv"), fired(tmp_path / "node-b.tsv")
    per_fire = Counter(by_a + by_b)
    assert set(per_fire.values()) == {1}, [k for k, n in per_fire.items() if n > 1]  # never twice
    later = sorted({fire for _, fire in by_a if float(fire) > killed + ttl + 1.0})
    assert len(later) >= 3, (killed, sorted({fire for _, fire in by_a}))
    for fire in later:  # node-a owns node-b's accounts once node-b's heartbeat is a TTL old
        assert {a for a, f in by_a if f == fire} == set(ACCOUNTS), fire
