"""A run that fails at start (its coordination store is down) leaves no broker state behind it.

What it created on the broker for the job goes; what the job had before stays.
"""

from __future__ import annotations

import os
import uuid

import nats
import pytest

from mocra_core import BackendUnavailable, Ctx, Mocra, Response, Spider
from mocra_core.queue import MsgpackCodec, NatsJetStreamQueue

pytestmark = pytest.mark.anyio

NATS_URL = os.environ.get("MOCRA_TEST_NATS_URL", "nats://127.0.0.1:4222")
DEAD_STORE = "redis://127.0.0.1:1/0"  # nothing listens there


class Nothing(Spider[dict[str, str]]):
    name = "nothing"
    start_urls = ["http://127.0.0.1:9/"]

    async def parse(self, response: Response, ctx: Ctx[dict[str, str]]) -> None:
        raise AssertionError("never reached: the run fails at start")


@pytest.fixture
def job() -> str:
    """A fresh job name (each test deletes the streams of its namespace)."""
    return f"failed-start-{uuid.uuid4().hex[:12]}"


async def streams(prefix: str) -> dict[str, int]:
    """The JetStream streams whose name starts with `prefix`, with their message counts."""
    nc = await nats.connect(NATS_URL)
    try:
        return {
            info.config.name: info.state.messages
            for info in await nc.jetstream().streams_info()
            if info.config.name and info.config.name.startswith(prefix)
        }
    finally:
        await nc.close()


async def delete_streams(prefix: str) -> None:
    nc = await nats.connect(NATS_URL)
    try:
        for name in await streams(prefix):
            await nc.jetstream().delete_stream(name)
    finally:
        await nc.close()


async def fail_at_start(job: str) -> BackendUnavailable:
    builder = Mocra.builder().set(
        f"queue.url={NATS_URL}", f"crawl.job={job}", f"coordination.url={DEAD_STORE}"
    )
    with pytest.raises(BackendUnavailable) as failed:
        await builder.spider(Nothing()).run_async()
    return failed.value


async def test_a_run_failing_at_start_removes_the_streams_it_created(job: str) -> None:
    prefix = f"mocra-{job}-"
    try:
        assert await streams(prefix) == {}

        error = await fail_at_start(job)

        assert "127.0.0.1:1" in str(error)  # the store that is down, named
        assert await streams(prefix) == {}
    finally:
        await delete_streams(prefix)


async def test_a_run_failing_at_start_keeps_the_streams_the_job_had(job: str) -> None:
    prefix = f"mocra-{job}-"
    try:
        async with NatsJetStreamQueue(NATS_URL, codec=MsgpackCodec(), namespace=f"mocra-{job}") as queue:
            await queue.publish("request", ["queued by an earlier run"])
        before = await streams(prefix)
        assert before == {f"mocra-{job}-work": 1, f"mocra-{job}-dlq": 0}

        await fail_at_start(job)

        assert await streams(prefix) == before
    finally:
        await delete_streams(prefix)
