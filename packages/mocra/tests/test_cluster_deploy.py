"""`mocra deploy --api`: new code for a 3-node Raft cluster over NATS, deployed through one node's admin API.

The cluster's generations live inside its nodes (the Raft plane), so `mocra deploy --queue` cannot reach
them; a node started with `--api` deploys its own file (`POST /api/v1/jobs/{job}/deploy`). Mid-crawl the
spider file (the same path for every node) is edited and deployed: items switch to generation 2, every
item once, no node restarted; then `--activate 1` the same way.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
from collections import Counter

import httpx
import pytest

from .paced import Paced
from .reaping import reaping
from .test_reload import after, rows, spider
from .tree_crawl import NATS_URL, free_addr, fresh_job, port_open, serving, tree_page, wait_until

pytestmark = pytest.mark.slow

KEY = "deploy-test-key"
PAGES = 600


def start_node(
    file: pathlib.Path, out: pathlib.Path, job: str, node: str, addr: str, seeds: str, api: str
) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "MOCRA_NODE_ID": node,
        "MOCRA_CLUSTER_ADDR": addr,
        "MOCRA_DATA_DIR": str(file.parent / node),
        "MOCRA_CLUSTER_PASSWORD": "test-password",
        "MOCRA_SEEDS": seeds,
    }
    settings = [
        "queue.visibility_timeout=3",
        "crawl.concurrency=4",
        "crawl.obey_robots=false",
        f'admin.keys=["{KEY}"]',
    ]
    return subprocess.Popen(
        [sys.executable, "-m", "mocra", "-v", "run", str(file), "-o", str(out), "--queue", NATS_URL,
         "--job", job, "--cluster", "--reload", "--api", api, *(f"-s{s}" for s in settings)],
        cwd=file.parent, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip


def deploy(*args: str) -> subprocess.CompletedProcess[str]:
    """`mocra deploy ARGS` with the nodes' key in `MOCRA_ADMIN_KEYS`."""
    env = {**os.environ, "MOCRA_ADMIN_KEYS": KEY}
    return subprocess.run(
        [sys.executable, "-m", "mocra", "deploy", *args], capture_output=True, text=True, timeout=180, env=env
    )


def test_a_deploy_and_a_rollback_through_one_nodes_api(tmp_path: pathlib.Path) -> None:
    addrs = [free_addr() for _ in range(3)]
    apis = [free_addr() for _ in range(3)]
    # 0.4 s a page while the test waits for items, a second while it waits for a deploy command (a loaded
    # machine crawled 200 pages by the deploy, then the queued work of generation 1, then that of 2, and
    # the crawl was over before the rollback showed), none once only the rest of the crawl is left
    paced = Paced(tree_page(PAGES, 0.0), delay=0.4)
    with serving(paced) as site, fresh_job(NATS_URL, prefix="c") as job, reaping() as nodes:
        base = site.url("").rstrip("/")
        file = spider(tmp_path / "tree.py", base, 1)
        outs = [tmp_path / f"n{n}.jsonl" for n in range(3)]
        nodes.append(start_node(file, outs[0], job, "n0", addrs[0], "", apis[0]))
        wait_until(lambda: port_open(addrs[0]), nodes, 20, f"{addrs[0]} did not start", interval=0.05)
        nodes += [start_node(file, outs[i], job, f"n{i}", addrs[i], addrs[0], apis[i]) for i in (1, 2)]
        wait_until(lambda: all(rows(out) for out in outs) and len(rows(*outs)) >= 20, nodes, 60, "no items")
        api = f"http://{apis[1]}"
        paced.delay = 1.0

        # the request carries no code nor path: the node refuses one
        refused = httpx.post(
            f"{api}/api/v1/jobs/{job}/deploy", json={"path": "/tmp/x.py"}, headers={"X-API-Key": KEY}
        )
        assert refused.status_code == 400 and "path" in refused.json()["error"], refused.text
        unkeyed = httpx.post(f"{api}/api/v1/jobs/{job}/deploy", json={})
        assert unkeyed.status_code == 401, unkeyed.text

        # a file that fails to import: 400, nothing activated
        file.write_text("import nothing_of_that_name\n")
        broken = deploy("--api", api, "--job", job)
        assert broken.returncode == 2 and "answered 400" in broken.stderr, broken.stderr
        assert "not activated" in broken.stderr, broken.stderr

        spider(file, base, 2)
        done = deploy("--api", api, "--job", job)
        paced.delay = 0.4
        assert done.returncode == 0, done.stderr
        assert "tree generation 2 (" in done.stdout and "generation 1 drains" in done.stdout, done.stdout
        wait_until(lambda: sum(r["gen"] == 2 for r in rows(*outs)) >= 30, nodes, 90, "no item of gen 2")

        paced.delay = 1.0
        back = deploy("--api", f"http://{apis[2]}", "--job", job, "--activate", "1")
        paced.delay = 0.4
        assert back.returncode == 0, back.stderr
        assert "generation 1 active again" in back.stdout, back.stdout
        marks = [len(rows(out)) for out in outs]
        wait_until(lambda: after(outs, marks).count(1) >= 20, nodes, 90, "no item of gen 1 again")
        paced.delay = 0.0
        outputs = [node.communicate(timeout=240)[0].decode() for node in nodes]
    for node, output in zip(nodes, outputs, strict=True):
        assert node.returncode == 0, output
        assert "tree: generation 2 loaded from" in output, output  # each loaded it, none restarted
    found = rows(*outs)
    assert Counter(row["id"] for row in found) == Counter(range(PAGES))  # none lost, none twice
    gens = [row["gen"] for row in found]
    assert gens.count(2) >= 30 and gens.count(1) >= 20, Counter(gens)
