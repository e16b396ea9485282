"""What only the Redis Streams backend does: several instances (workers) on one queue, foreign bytes on
the wire, an unreachable or restarted server. Each test uses a fresh namespace on the Redis of conftest."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import msgspec
import pytest
import redis.asyncio as aioredis
from anyio import wait_all_tasks_blocked

from mocra_core import BackendUnavailable, ConfigError
from mocra_core._gather import Gather
from mocra_core.queue import MsgpackCodec, RedisStreamsQueue, open_queue

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from mocra_core.queue import Delivery

pytestmark = pytest.mark.anyio

REDIS_URL = os.environ.get("MOCRA_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")  # as in conftest.py
T = "fetch"
LANE0 = f"{2**63:016x}"  # the stream of priority 0 is `{namespace}:{topic}:q:{LANE0}`


@pytest.fixture
def namespace(redis_namespace: str) -> str:
    return redis_namespace


def open_(namespace: str, url: str = REDIS_URL, **options: Any) -> RedisStreamsQueue:
    return RedisStreamsQueue(url, codec=MsgpackCodec(), namespace=namespace, **options)


async def take(queue: RedisStreamsQueue, n: int = 1, *, wait: float = 0.0) -> list[Delivery]:
    return list(await queue.consume(T, group="workers", max_messages=n, wait=wait))


@asynccontextmanager
async def native(url: str = REDIS_URL) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.Redis.from_url(url)
    try:
        yield client
    finally:
        await client.aclose()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


# ----------------------------------------------------------------------------------------------- wire


async def test_scripts_the_server_forgot_are_loaded_again(namespace: str) -> None:
    async with open_(namespace) as queue:
        await queue.publish(T, ["a"])
        async with native() as client:
            await client.script_flush()  # as after a restart without persistence, or a failover
        await queue.publish(T, ["b"])  # NOSCRIPT in the pipeline: loaded and run again
        found = await take(queue, 2)
        assert [d.payload for d in found] == ["a", "b"]
        await queue.ack(found)
        assert await queue.pending(T) == 0


async def test_garbage_written_to_a_stream_is_dead_lettered_and_never_handed_out(namespace: str) -> None:
    async with open_(namespace) as queue:
        stream = f"{namespace}:{{{T}}}:q:{LANE0}"
        await queue.publish(T, ["before"])
        async with native() as client:
            await client.xadd(stream, {"e": b"\xc1 not msgpack"})
            await client.xadd(stream, {"something": "else"})
            await client.xadd(stream, {"e": b"\x92\x01\x02", "k": "site"})  # msgpack, not an envelope
        await queue.publish(T, ["after"], key="site")
        assert await queue.pending(T) == 5
        got = await take(queue, 10)
        assert [d.payload for d in got] == ["before", "after"]  # the key was not left locked
        assert await queue.pending(T) == 2
        letters = await queue.dead_letters(T)
        assert len(letters) == 3
        assert all("undecodable envelope" in x.reason or "without an envelope" in x.reason for x in letters)
        assert letters[0].payload == b"\xc1 not msgpack"
        assert (letters[2].key, letters[2].attempt) == ("site", 1)
        await queue.ack(got)
        assert await queue.pending(T) == 0


async def test_a_payload_the_codec_rejects_is_dead_lettered_with_the_reason(namespace: str) -> None:
    async with open_(namespace) as writer:
        await writer.publish(T, ["not an int", 7])
    async with RedisStreamsQueue(REDIS_URL, codec=MsgpackCodec(int), namespace=namespace) as reader:
        [d] = await take(reader, 10)
        assert d.payload == 7
        [dead] = await reader.dead_letters(T)
        assert "undecodable payload" in dead.reason
        assert dead.payload == MsgpackCodec().encode("not an int")  # raw bytes: the codec cannot read them
        await reader.ack([d])
        assert await reader.pending(T) == 0


async def test_an_envelope_from_a_newer_minor_version_is_still_read(namespace: str) -> None:
    codec = MsgpackCodec()
    newer = {"id": "n1", "topic": T, "body": codec.encode("hi"), "created": 5.0, "minor": 9, "trace": [1, 2]}
    async with open_(namespace) as queue:
        await queue.publish(T, ["old"])  # a newer node publishes with the same script: the lane is known
        async with native() as client:
            await client.xadd(f"{namespace}:{{{T}}}:q:{LANE0}", {"e": msgspec.msgpack.encode(newer)})
        old, new = await take(queue, 2)
        assert (new.id, new.payload, new.created, new.attempt) == ("n1", "hi", 5.0, 1)


async def test_every_key_lives_under_the_namespace(namespace: str) -> None:
    async with open_(namespace, visibility_timeout=0.1) as queue:
        await queue.publish(T, ["a", "b"], key="k", priority=3)
        await queue.publish(T, ["c"], delay=0.05)
        a, *_ = await take(queue, 5)
        await queue.dead_letter(a, reason="x")
        await take(queue, 5, wait=0.3)
    async with native() as client:
        keys = [k async for k in client.scan_iter(match=f"*{namespace}*")]
    assert keys and all(k.startswith(f"{namespace}:{{{T}}}:".encode()) for k in keys)


async def test_a_closing_worker_leaves_the_consumer_group_unless_it_holds_leases(namespace: str) -> None:
    stream = f"{namespace}:{{{T}}}:q:{LANE0}"
    async with open_(namespace) as queue:
        await queue.publish(T, ["a", "b"])
        async with open_(namespace) as holder:
            [a] = await take(holder)  # never acked
        async with native() as client:
            consumers = await client.xinfo_consumers(stream, "workers")
        assert [c["pending"] for c in consumers] == [1]  # the holder stays while it holds "a"
        again, b = await take(queue, 2)  # it closed holding "a": the lease comes back at once
        assert (again.payload, again.attempt, b.payload) == (a.payload, 2, "b")
        await queue.ack([again, b])
    async with native() as client:
        consumers = await client.xinfo_consumers(stream, "workers")
    assert consumers == []  # the holder was dropped once its lease was claimed, the other on closing


# ------------------------------------------------------------------------------------ many workers


async def test_a_dead_workers_lease_reaches_another_worker_with_the_next_attempt(namespace: str) -> None:
    async with open_(namespace, visibility_timeout=0.3) as survivor:
        async with open_(namespace, visibility_timeout=0.3) as doomed:
            await doomed.publish(T, ["x"])
            await doomed.publish(T, ["k1", "k2"], key="k")
            leased = await take(doomed, 3)
            assert [d.payload for d in leased] == ["x", "k1"]
        # `doomed` is gone without acking; its leases come back, its key is still its message's
        with anyio.fail_after(5):
            back = await take(survivor, 10, wait=5)
        assert sorted((d.payload, d.attempt) for d in back) == [("k1", 2), ("x", 2)]  # k2 waits for k1
        await survivor.ack(back)
        [k2] = await take(survivor, 10)
        assert (k2.payload, k2.key, k2.attempt) == ("k2", "k", 1)
        await survivor.ack([k2])
        assert await survivor.pending(T) == 0


async def test_a_key_is_held_across_workers_and_its_release_wakes_the_other(namespace: str) -> None:
    async with open_(namespace) as a, open_(namespace) as b:
        await a.publish(T, ["k1", "k2"], key="site")
        [k1] = await take(a)
        assert await take(b, 10) == []
        assert await a.pending(T) == await b.pending(T) == 2
        got: list[Delivery] = []

        async def consumer() -> None:
            got.extend(await take(b, 10, wait=30))

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(consumer)
                await anyio.sleep(0.05)
                await a.ack([k1])
        assert [d.payload for d in got] == ["k2"]
        await b.ack(got)
        assert await a.pending(T) == 0


async def test_workers_of_two_instances_share_a_topic(namespace: str) -> None:
    async with open_(namespace) as a, open_(namespace) as b:
        await a.publish(T, list(range(30)))
        seen: dict[str, list[object]] = {"a": [], "b": []}

        async def worker(name: str, queue: RedisStreamsQueue) -> None:
            while batch := await take(queue, 2, wait=0.2):
                seen[name] += [d.payload for d in batch]
                await anyio.sleep(0.002)
                await queue.ack(batch)

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(worker, "a", a)
                tg.start_soon(worker, "b", b)
        assert seen["a"] and seen["b"]
        assert sorted(seen["a"] + seen["b"]) == list(range(30))  # type: ignore[type-var]


async def test_many_waiting_consumers_of_one_instance_all_get_woken(namespace: str) -> None:
    async with open_(namespace) as queue:
        got: list[Delivery] = []

        async def consumer() -> None:
            got.extend(await take(queue, wait=30))

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                for _ in range(20):
                    tg.start_soon(consumer)
                await anyio.sleep(0.1)
                async with open_(namespace) as publisher:  # another process, as far as Redis knows
                    for i in range(0, 20, 4):
                        await publisher.publish(T, list(range(i, i + 4)))
        assert sorted(d.payload for d in got) == list(range(20))  # type: ignore[type-var]


async def test_concurrent_consumes_and_acks_share_round_trips(namespace: str) -> None:
    async with open_(namespace) as queue:
        await queue.publish(T, list(range(20)))
        calls = {"take": 0, "ack": 0}
        store = queue._store
        store_take, store_ack = store.take, store.ack

        async def counted_take(*args: Any, **kwargs: Any) -> Any:
            calls["take"] += 1
            return await store_take(*args, **kwargs)

        async def counted_ack(*args: Any, **kwargs: Any) -> Any:
            calls["ack"] += 1
            return await store_ack(*args, **kwargs)

        store.take, store.ack = counted_take, counted_ack  # type: ignore[method-assign]
        got: list[Delivery] = []

        async def worker() -> None:
            batch = await take(queue)
            got.extend(batch)
            await queue.ack(batch)

        async with anyio.create_task_group() as tg:
            for _ in range(20):
                tg.start_soon(worker)
        assert sorted(d.payload for d in got) == list(range(20))  # type: ignore[type-var]
        assert calls["take"] <= 3 and calls["ack"] <= 3  # not 20 each
        assert await queue.pending(T) == 0


async def test_close_wakes_the_listener_and_every_follower(namespace: str) -> None:
    errors: list[BaseException] = []
    async with open_(namespace) as queue:

        async def consumer() -> None:
            try:
                await take(queue, wait=30)
            except anyio.ClosedResourceError as exc:
                errors.append(exc)

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                for _ in range(3):
                    tg.start_soon(consumer)
                await anyio.sleep(0.1)
                await queue.aclose()
    assert len(errors) == 3


async def test_many_messages_held_for_one_key_do_not_hide_others(namespace: str) -> None:
    async with open_(namespace) as queue:
        await queue.publish(T, list(range(1500)), key="busy")  # more than one take scans
        await queue.publish(T, ["free"])
        [first] = await take(queue)
        assert first.payload == 0
        with anyio.fail_after(5):
            [free] = await take(queue, 5)
        assert free.payload == "free"
        assert await queue.pending(T) == 1501


async def test_one_group_per_topic_and_instance(namespace: str) -> None:
    async with open_(namespace) as queue:
        await queue.consume(T, group="a", wait=0)
        with pytest.raises(ValueError, match="consumed by group 'a'"):
            await queue.consume(T, group="b", wait=0)


# ---------------------------------------------------------------------------------- server trouble


async def test_an_unreachable_server_is_reported_promptly_with_the_url_redacted() -> None:
    url = f"redis://:secret@127.0.0.1:{free_port()}/0"
    start = anyio.current_time()
    with pytest.raises(BackendUnavailable) as caught:
        async with open_("unused", url, connect_timeout=1.0):
            pass
    assert anyio.current_time() - start < 5
    assert caught.value.backend == "redis"
    assert "127.0.0.1" in str(caught.value) and "secret" not in str(caught.value)


def test_a_bad_url_is_a_config_error_with_the_password_redacted() -> None:
    with pytest.raises(ConfigError, match="queue.url") as caught:
        open_("unused", "redis://:secret@127.0.0.1:notaport/0")
    assert "notaport" in str(caught.value) and "secret" not in str(caught.value)


async def test_open_queue_gives_a_redis_queue(namespace: str) -> None:
    queue = open_queue(REDIS_URL, codec=MsgpackCodec(), namespace=namespace, visibility_timeout=7)
    assert isinstance(queue, RedisStreamsQueue)
    assert (queue.namespace, queue.visibility_timeout) == (namespace, 7)
    async with queue:
        await queue.publish(T, ["x"])
        assert await queue.pending(T) == 1


class Server:
    """A redis-server of our own (no persistence) that a test may stop and start again."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._process: anyio.abc.Process | None = None

    async def start(self) -> None:
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
        self._process = await anyio.open_process([*command, "--appendonly", "no"], stdout=subprocess.DEVNULL)
        async with native(self.url) as client:
            with anyio.fail_after(10):
                while True:
                    try:
                        await client.ping()
                        return
                    except OSError:
                        await anyio.sleep(0.02)
                    except aioredis.ConnectionError:
                        await anyio.sleep(0.02)

    async def stop(self) -> None:
        if self._process is not None:
            self._process.kill()
            await self._process.wait()
            await self._process.aclose()
            self._process = None


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    if shutil.which("redis-server") is None:
        pytest.skip("needs the redis-server binary")
    server = Server()
    try:
        yield server
    finally:
        await server.stop()


async def test_a_worker_reconnects_after_the_server_restarts(server: Server) -> None:
    await server.start()
    async with open_("restart", server.url, visibility_timeout=5, reconnect_timeout=20) as queue:
        await queue.publish(T, ["before"])
        [d] = await take(queue)
        await queue.ack([d])
        got: list[Delivery] = []

        async def consumer() -> None:  # waits across the restart
            got.extend(await take(queue, wait=30))

        with anyio.fail_after(15):
            async with anyio.create_task_group() as tg:
                tg.start_soon(consumer)
                await anyio.sleep(0.1)
                await server.stop()
                await anyio.sleep(0.3)
                async with anyio.create_task_group() as during:
                    during.start_soon(queue.publish, T, ["during"])  # retries until the server is back
                    await anyio.sleep(0.3)
                    await server.start()
        assert [d.payload for d in got] == ["during"]  # the new server is empty: "before" was acked anyway
        await queue.ack(got)
        await queue.publish(T, ["after"])
        [after] = await take(queue)
        assert (after.payload, await queue.pending(T)) == ("after", 1)


async def test_a_server_gone_for_good_raises_backend_unavailable(server: Server) -> None:
    await server.start()
    async with open_("gone", server.url, reconnect_timeout=0.5) as queue:
        await queue.publish(T, ["x"])
        await server.stop()
        start = anyio.current_time()
        with pytest.raises(BackendUnavailable, match="unreachable for 0.5 s"):
            await queue.publish(T, ["y"])
        assert anyio.current_time() - start < 5


# ------------------------------------------------------------------- Gather (no server needed)


class Sends:
    """A `send` for `Gather` that records its batches; batch i returns when `release(i)` is called."""

    def __init__(self, *, fail: Exception | None = None) -> None:
        self.batches: list[list[int]] = []
        self.gates: list[anyio.Event] = []
        self.fail = fail

    def release(self, batch: int) -> None:
        self.gates[batch].set()

    async def __call__(self, items: list[int]) -> list[int]:
        self.batches.append(items)
        self.gates.append(anyio.Event())
        if self.fail is not None:
            raise self.fail
        await self.gates[-1].wait()
        return [item * 10 for item in items]


async def gather_all(gather: Gather[int, int], items: list[int], results: dict[int, int]) -> None:
    async def call(item: int) -> None:
        results[item] = await gather(item)

    async with anyio.create_task_group() as tg:
        for item in items:
            tg.start_soon(call, item)
            await wait_all_tasks_blocked()


async def test_gather_sends_a_lone_call_at_once_and_gathers_calls_made_meanwhile() -> None:
    sends = Sends()
    gather: Gather[int, int] = Gather(sends)
    results: dict[int, int] = {}
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(gather_all, gather, [1, 2, 3, 4], results)
            await wait_all_tasks_blocked()
            assert sends.batches == [[1]]  # 2, 3, 4 wait for 1's round trip, together
            sends.release(0)
            await wait_all_tasks_blocked()
            sends.release(1)
    assert sends.batches == [[1], [2, 3, 4]]
    assert results == {1: 10, 2: 20, 3: 30, 4: 40}


async def test_gather_gives_every_member_the_error_of_its_batch() -> None:
    sends = Sends(fail=ValueError("boom"))
    gather: Gather[int, int] = Gather(sends)
    with pytest.raises(ValueError, match="boom"):
        await gather(1)
    with pytest.raises(ValueError, match="boom"):
        await gather(2)  # the next call is sent again: nothing is stuck


async def test_gather_leaves_out_a_member_cancelled_before_its_batch_is_sent() -> None:
    sends = Sends()
    gather: Gather[int, int] = Gather(sends)
    results: dict[int, int] = {}
    doomed = anyio.CancelScope()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(gather_all, gather, [1], results)
            await wait_all_tasks_blocked()
            tg.start_soon(call_in, doomed, gather, 3)
            await wait_all_tasks_blocked()
            tg.start_soon(gather_all, gather, [2], results)
            await wait_all_tasks_blocked()
            doomed.cancel()
            await wait_all_tasks_blocked()
            sends.release(0)
            await wait_all_tasks_blocked()
            sends.release(1)
    assert sends.batches == [[1], [2]]
    assert results == {1: 10, 2: 20}


async def call_in(scope: anyio.CancelScope, gather: Gather[int, int], item: int) -> None:
    with scope:
        await gather(item)


async def test_gather_hands_the_result_of_a_member_cancelled_in_flight_to_orphan() -> None:
    sends = Sends()
    orphans: list[int] = []
    gather: Gather[int, int] = Gather(sends, orphans.append)
    results: dict[int, int] = {}
    doomed = anyio.CancelScope()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(gather_all, gather, [1], results)
            await wait_all_tasks_blocked()
            tg.start_soon(gather_all, gather, [3], results)
            await wait_all_tasks_blocked()
            tg.start_soon(call_in, doomed, gather, 2)
            await wait_all_tasks_blocked()
            sends.release(0)  # 1 returns; 3 sends [3, 2]
            await wait_all_tasks_blocked()
            assert sends.batches == [[1], [3, 2]]
            doomed.cancel()
            await wait_all_tasks_blocked()
            sends.release(1)
    assert results == {1: 10, 3: 30}
    assert orphans == [20]


async def test_gather_members_call_again_when_their_sender_is_cancelled_mid_call() -> None:
    sends = Sends()
    gather: Gather[int, int] = Gather(sends)
    results: dict[int, int] = {}
    doomed = anyio.CancelScope()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(call_in, doomed, gather, 1)
            await wait_all_tasks_blocked()
            tg.start_soon(gather_all, gather, [2, 3], results)
            await wait_all_tasks_blocked()
            doomed.cancel()  # 1 is cancelled while it sends; 2 and 3 gathered behind it
            await wait_all_tasks_blocked()
            sends.release(1)
    assert sends.batches == [[1], [2, 3]]
    assert results == {2: 20, 3: 30}


async def test_gather_is_not_stuck_when_a_whole_gathering_batch_is_cancelled() -> None:
    sends = Sends()
    gather: Gather[int, int] = Gather(sends)
    results: dict[int, int] = {}
    doomed = anyio.CancelScope()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(gather_all, gather, [1], results)
            await wait_all_tasks_blocked()
            tg.start_soon(call_in, doomed, gather, 2)
            await wait_all_tasks_blocked()
            doomed.cancel()
            await wait_all_tasks_blocked()
            sends.release(0)
            await wait_all_tasks_blocked()
            tg.start_soon(gather_all, gather, [3], results)
            await wait_all_tasks_blocked()
            sends.release(1)
    assert sends.batches == [[1], [3]]
    assert results == {1: 10, 3: 30}
