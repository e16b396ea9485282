"""`mocra run --cluster`: nodes share a crawl through NATS with a Raft control plane instead of Redis;
`mocra cluster status`; the builder's and the CLI's argument errors."""

from __future__ import annotations

import os
import pathlib
import subprocess
import time
from collections.abc import Iterator

import anyio
import pytest

from mocra import ConfigError, Mocra
from mocra._cli import main
from mocra_cluster import ClusterConfig, RaftControlPlane
from mocra_core.testing import LocalServer

from .paced import Paced
from .tree_crawl import (
    NATS_URL,
    SPIDER,
    free_addr,
    fresh_job,
    items,
    kill,
    page_hits,
    port_open,
    serving,
    start_crawl,
    tree_page,
    wait_until,
)

PAGES = 300


# ---------------------------------------------------------------------- argument errors


def test_the_builder_refuses_what_is_not_a_cluster_config() -> None:
    with pytest.raises(ConfigError, match="expected a mocra_cluster.ClusterConfig.*got str"):
        Mocra.builder().cluster("127.0.0.1:7100")  # type: ignore[arg-type]


def test_a_cluster_needs_a_shared_queue(tmp_path: pathlib.Path) -> None:
    from mocra import Spider

    class One(Spider[dict[str, int]]):
        name = "one"
        start_urls = ("http://127.0.0.1:9/",)

        async def parse(self, response: object, ctx: object) -> None:
            return None

    node = ClusterConfig.bootstrap("n1", free_addr(), tmp_path, password="pw")
    with pytest.raises(ConfigError, match="queue.url: the nodes of a cluster share a crawl through a broker"):
        Mocra.builder().spider(One()).cluster(node).build()


def test_run_cluster_names_the_missing_variable(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    spider = tmp_path / "tree.py"
    spider.write_text(SPIDER.replace("BASE", "http://127.0.0.1:9"))
    for name in (
        "MOCRA_NODE_ID",
        "MOCRA_CLUSTER_ADDR",
        "MOCRA_DATA_DIR",
        "MOCRA_SEEDS",
        "MOCRA_CLUSTER_PASSWORD",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MOCRA_NODE_ID", "n1")
    monkeypatch.setenv("MOCRA_CLUSTER_ADDR", "127.0.0.1")  # no port
    assert main(["run", str(spider), "--queue", "nats://127.0.0.1:4222", "--cluster"]) == 2
    assert "environment: MOCRA_CLUSTER_ADDR: expected host:port" in capsys.readouterr().err
    monkeypatch.setenv("MOCRA_CLUSTER_ADDR", "127.0.0.1:7100")
    assert main(["run", str(spider), "--queue", "nats://127.0.0.1:4222", "--cluster"]) == 2
    assert "environment: MOCRA_DATA_DIR: is not set" in capsys.readouterr().err


def test_cluster_status_needs_the_password(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MY_PASSWORD", raising=False)
    assert main(["cluster", "status", "--addr", "127.0.0.1:7100", "--password-env", "MY_PASSWORD"]) == 2
    assert "environment: MY_PASSWORD: is not set" in capsys.readouterr().err


# ---------------------------------------------------------------------- mocra cluster status


@pytest.mark.anyio
async def test_cluster_status_asks_a_running_node(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    addr = free_addr()
    monkeypatch.setenv("MOCRA_CLUSTER_PASSWORD", "s3cret")
    async with RaftControlPlane(ClusterConfig.bootstrap("n1", addr, tmp_path, password="s3cret")) as plane:
        with anyio.fail_after(10):
            await plane.wait_ready()
        await plane.set("k", b"v")
        code = await anyio.to_thread.run_sync(main, ["cluster", "status", "--addr", addr])
        out = capsys.readouterr().out
        monkeypatch.setenv("MOCRA_CLUSTER_PASSWORD", "wrong")
        refused = await anyio.to_thread.run_sync(
            main, ["cluster", "status", "--addr", addr, "--timeout", "1"]
        )
    assert code == 0, out
    assert f"node     {addr} (leader)" in out and f"leader   {addr}" in out
    assert "term     1" in out and f"members  1: {addr}" in out and "quorum   yes" in out
    assert int(out.split("applied  ")[1].split()[0]) >= 2  # the node's join and the set
    assert refused == 2
    assert "cluster backend at" in capsys.readouterr().err


# ---------------------------------------------------------------------- three nodes, one killed


@pytest.fixture
def paced() -> Paced:
    # slow enough that the bootstrap node, crawling alone until the others have joined (1-2 s), is still
    # far from done when they come in (at 0.01 s it could finish the 300 pages before they got any work)
    return Paced(tree_page(PAGES, 0.0), delay=0.2)


@pytest.fixture
def site(paced: Paced) -> Iterator[LocalServer]:
    with serving(paced) as server:
        yield server


def start_node(
    tmp_path: pathlib.Path, site: LocalServer, job: str, node: str, addr: str, seeds: str
) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "MOCRA_NODE_ID": node,
        "MOCRA_CLUSTER_ADDR": addr,
        "MOCRA_DATA_DIR": str(tmp_path / node),
        "MOCRA_CLUSTER_PASSWORD": "test-password",
        "MOCRA_SEEDS": seeds,
    }
    settings = [
        "queue.visibility_timeout=3",
        "crawl.concurrency=8",
        "crawl.parse_workers=4",
        "crawl.obey_robots=false",
    ]
    args = ["--queue", NATS_URL, "--job", job, "--cluster"]
    return start_crawl(tmp_path, site.base_url, node, args, settings, env)


@pytest.mark.slow
def test_three_nodes_crawl_over_nats_and_survive_a_sigkill(
    tmp_path: pathlib.Path, site: LocalServer, paced: Paced
) -> None:
    addrs = [free_addr() for _ in range(3)]
    started = time.monotonic()
    with fresh_job(NATS_URL, prefix="c") as job:
        # n0 bootstraps a single-node cluster (MOCRA_SEEDS empty); n1 and n2 join through it, at once.
        first = start_node(tmp_path, site, job, "n0", addrs[0], "")
        wait_until(lambda: port_open(addrs[0]), [first], 20, f"{addrs[0]} did not start", interval=0.05)
        others = [start_node(tmp_path, site, job, f"n{i}", addrs[i], addrs[0]) for i in (1, 2)]
        wait_until(
            lambda: (
                len(items(tmp_path / "n0.jsonl")) >= 30
                and all(items(tmp_path / f"n{i}.jsonl") for i in (1, 2))
            ),
            [first, *others],
            40,
            "the nodes made no progress",
        )
        kill(first)  # the bootstrap node, most likely the Raft leader
        paced.delay = 0.0  # the survivors crawl the rest at full speed
        outputs = [node.communicate(timeout=60)[0].decode() for node in others]
        elapsed = time.monotonic() - started
    for node, out in zip(others, outputs, strict=True):
        assert node.returncode == 0, out
        # the job's counts are saved when the job is found finished, while every node is still up: the
        # last node to stop (alone, no majority) still reports them
        assert "job so far" in out and "out of reach" not in out, out
    found = [items(tmp_path / f"n{i}.jsonl") for i in range(3)]
    assert set().union(*found) == set(range(PAGES))  # nothing lost
    assert all(found[1:]), "a joining node did not share the crawl"
    assert site.hits["/p/0"] == 1  # seeded once, through the control plane
    hits = page_hits(site)
    print(f"3 nodes: {PAGES} pages in {elapsed:.1f} s; refetched {sum(h > 1 for h in hits.values())} pages")
