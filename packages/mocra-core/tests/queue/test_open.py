"""`open_queue` picks a backend from the URL and names what is wrong with a bad one."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from mocra_core import ConfigError
from mocra_core.queue import LmdbQueue, MemoryQueue, MsgpackCodec, open_queue

if TYPE_CHECKING:
    import pathlib

pytestmark = pytest.mark.anyio


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
