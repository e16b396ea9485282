"""`open_queue` picks a backend from the URL and names what is wrong with a bad one."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import nats
import pytest
from aiokafka.admin import AIOKafkaAdminClient
from nats.js.api import StorageType

from mocra_core import ConfigError
from mocra_core.config import load
from mocra_core.engine._backend_makers import backend_options
from mocra_core.queue import (
    KafkaQueue,
    LmdbQueue,
    MemoryQueue,
    MsgpackCodec,
    NatsJetStreamQueue,
    RedisStreamsQueue,
    open_queue,
)

if TYPE_CHECKING:
    import pathlib

pytestmark = pytest.mark.anyio

REDIS_URL = os.environ.get("MOCRA_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")  # as in conftest.py
NATS_URL = os.environ.get("MOCRA_TEST_NATS_URL", "nats://127.0.0.1:4222")


async def test_memory_url_gives_a_fresh_memory_queue() -> None:
    async with open_queue("memory://", visibility_timeout=5, max_attempts=2) as first:
        assert isinstance(first, MemoryQueue)
        assert (first.visibility_timeout, first.max_attempts) == (5, 2)
        await first.publish("t", ["x"])
        async with open_queue("memory://") as second:
            assert await second.pending("t") == 0


async def test_lmdb_url_gives_an_lmdb_queue_in_that_directory(tmp_path: pathlib.Path) -> None:
    async with open_queue(f"lmdb://{tmp_path}/q", codec=MsgpackCodec()) as queue:
        assert isinstance(queue, LmdbQueue)
        assert queue.path == f"{tmp_path}/q"
        await queue.publish("t", ["x"])
    async with LmdbQueue(tmp_path / "q", codec=MsgpackCodec()) as queue:
        assert await queue.pending("t") == 1


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("lmdb:///tmp/q", "needs a codec"),
        ("lmdb://", "needs a directory"),
        ("redis://:secret@127.0.0.1:6379/0", "a redis:// queue needs a codec"),
        ("rediss://:secret@127.0.0.1", "a rediss:// queue needs a codec"),
        ("nats://127.0.0.1:4222", "a nats:// queue needs a codec"),
        ("kafka://127.0.0.1:9092", "a kafka:// queue needs a codec"),
        ("amqp://127.0.0.1", "unknown scheme 'amqp'"),
        ("memory", "unknown scheme 'memory'"),
        ("", "unknown scheme ''"),
    ],
)
def test_bad_urls_raise_config_error(url: str, problem: str) -> None:
    with pytest.raises(ConfigError, match="queue.url") as caught:
        open_queue(url)
    assert problem in str(caught.value)
    assert caught.value.key == "queue.url"
    assert "secret" not in str(caught.value)


def _options(url: str, *overrides: str) -> dict[str, object]:
    """What a run with these `-s` overrides passes to the backend of `url`."""
    return backend_options(load(None, overrides=[f"queue.url={url}", *overrides], environ={}))


async def test_kafka_settings_reach_the_queue(kafka_url: str, kafka_namespace: str) -> None:
    options = _options(kafka_url, "queue.kafka.partitions=3", "queue.kafka.session_timeout=2")
    queue = open_queue(kafka_url, codec=MsgpackCodec(), namespace=kafka_namespace, options=options)
    assert isinstance(queue, KafkaQueue)
    async with queue:
        await queue.publish("t", ["x"])
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_url.removeprefix("kafka://"))
    await admin.start()
    try:
        [described] = await admin.describe_topics([f"{kafka_namespace}.t.0"])
    finally:
        await admin.close()
    assert len(described["partitions"]) == 3


async def test_nats_settings_reach_the_queue(nats_namespace: str) -> None:
    options = _options(NATS_URL, 'queue.nats.storage="memory"')
    async with open_queue(NATS_URL, codec=MsgpackCodec(), namespace=nats_namespace, options=options) as queue:
        await queue.publish("t", ["x"])
    nc = await nats.connect(NATS_URL)
    try:
        info = await nc.jetstream().stream_info(f"{nats_namespace}-work")
    finally:
        await nc.close()
    assert info.config.storage == StorageType.MEMORY


def test_redis_settings_reach_the_queue() -> None:
    options = _options(REDIS_URL, "queue.redis.connect_timeout=0.5", "queue.redis.reconnect_timeout=2")
    queue = open_queue(REDIS_URL, codec=MsgpackCodec(), options=options)
    assert isinstance(queue, RedisStreamsQueue)
    assert (queue._store._connect_timeout, queue._store._reconnect_timeout) == (0.5, 2)


def test_the_liveness_timeout_reaches_redis_and_nats_queues() -> None:
    for url in (REDIS_URL, NATS_URL):
        queue = open_queue(url, codec=MsgpackCodec(), options=_options(url, "queue.liveness_timeout=4"))
        assert isinstance(queue, RedisStreamsQueue | NatsJetStreamQueue)
        assert queue.liveness_timeout == 4


def test_options_of_another_backend_are_not_passed() -> None:
    assert _options(NATS_URL, "queue.kafka.partitions=3") == {
        "storage": "file",
        "timeout": 5.0,
        "liveness_timeout": 10.0,
    }
    assert _options("memory://", "queue.kafka.partitions=3") == {}


@pytest.mark.parametrize(
    ("override", "problem"),
    [
        ("queue.kafka.partitions=0", "partitions: must be at least 1"),
        ("queue.kafka.fetch_wait=0", "fetch_wait: must be > 0"),
        ("queue.kafka.lanes=[1, 99999999999999999999]", "lanes"),
        ('queue.nats.storage="disk"', "Invalid enum value 'disk'"),
        ("queue.redis.timeout=1", "queue.redis.timeout: unknown key"),
    ],
)
def test_bad_backend_settings_name_their_section(override: str, problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load(None, overrides=[override], environ={})
    section = override.rpartition(".")[0]
    assert caught.value.key.startswith(section)
    assert problem in str(caught.value)


def test_an_option_the_backend_does_not_take_is_named() -> None:
    with pytest.raises(ConfigError, match="KafkaQueue takes no option storage") as caught:
        open_queue("kafka://127.0.0.1:9092", codec=MsgpackCodec(), options={"storage": "memory"})
    assert caught.value.key == "queue.kafka"
