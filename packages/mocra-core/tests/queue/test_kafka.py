"""`KafkaQueue` beyond the conformance suite, on a real Kafka-compatible broker (tansu) on 127.0.0.1."""

from __future__ import annotations

import itertools
import os
import socket
import sys
import time
from typing import TYPE_CHECKING, Any

import anyio
import msgspec
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.partitioner import murmur2

from mocra_core import BackendUnavailable, MissingExtra
from mocra_core.backends.kafka._produce import DirectProducer
from mocra_core.backends.kafka._reader import lanes_of
from mocra_core.queue import KafkaQueue, MsgpackCodec, open_queue

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

    from conftest import Tansu
    from mocra_core.queue import Delivery

pytestmark = pytest.mark.anyio

KAFKA_URL_SET = bool(os.environ.get("MOCRA_TEST_KAFKA_URL"))

T = "fetch"


class Page(msgspec.Struct):
    url: str


@pytest.fixture
def url(kafka_url: str) -> str:
    return kafka_url


@pytest.fixture
def make(url: str, kafka_namespace: str, kafka_options: dict[str, Any]) -> Callable[..., KafkaQueue]:
    def make_(**options: Any) -> KafkaQueue:
        codec = options.pop("codec", MsgpackCodec())
        return KafkaQueue(url, codec=codec, namespace=kafka_namespace, **(kafka_options | options))

    return make_


@pytest.fixture
async def admin(url: str) -> AsyncIterator[AIOKafkaAdminClient]:
    client = AIOKafkaAdminClient(bootstrap_servers=url.removeprefix("kafka://"))
    await client.start()
    yield client
    await client.close()


async def produce_raw(
    url: str, topic: str, value: bytes | None, *, key: bytes | None = None, partition: int = 0
) -> None:
    """Write a record with the native client, bypassing the queue."""
    producer = AIOKafkaProducer(bootstrap_servers=url.removeprefix("kafka://"))
    await producer.start()
    try:
        await producer.send_and_wait(topic, value, key=key, partition=partition)
    finally:
        await producer.stop()


async def read_partition(url: str, topic: str, partition: int) -> list[Any]:
    """Every record of one partition, read with the native client."""
    consumer = AIOKafkaConsumer(bootstrap_servers=url.removeprefix("kafka://"), auto_offset_reset="earliest")
    await consumer.start()
    try:
        tp = TopicPartition(topic, partition)
        consumer.assign([tp])
        end = (await consumer.end_offsets([tp]))[tp]
        records: list[Any] = []
        with anyio.fail_after(10):
            while await consumer.position(tp) < end:
                records += (await consumer.getmany(tp, timeout_ms=100)).get(tp, [])
        return records
    finally:
        await consumer.stop()


async def eventually(check: Callable[[], Awaitable[bool]], seconds: float = 10.0) -> None:
    with anyio.fail_after(seconds):
        for _ in itertools.count():  # poll: the broker tells no one
            if await check():
                return
            await anyio.sleep(0.02)


async def take(queue: KafkaQueue, n: int = 1, *, wait: float = 0.0) -> list[Delivery]:
    return list(await queue.consume(T, group="workers", max_messages=n, wait=wait))


async def test_unreachable_broker_raises_backend_unavailable_naming_the_url() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    start = time.monotonic()
    with pytest.raises(BackendUnavailable) as caught:
        async with KafkaQueue(f"kafka://127.0.0.1:{port}", codec=MsgpackCodec()):
            pass
    assert time.monotonic() - start < 6
    assert caught.value.url == f"kafka://127.0.0.1:{port}"
    assert f"127.0.0.1:{port}" in str(caught.value)


async def test_open_queue_gives_a_kafka_queue(url: str, kafka_namespace: str) -> None:
    queue = open_queue(url, codec=MsgpackCodec(), namespace=kafka_namespace, visibility_timeout=7)
    assert isinstance(queue, KafkaQueue)
    assert (queue.visibility_timeout, queue.namespace, queue.partitions) == (7, kafka_namespace, 4)


def test_missing_driver_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m.startswith("mocra_core.backends.kafka")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "aiokafka", None)
    with pytest.raises(MissingExtra, match=r"mocra\[kafka\]"):
        open_queue("kafka://127.0.0.1:9092", codec=MsgpackCodec())


async def test_lane_topics_have_the_configured_partitions_and_keys_pick_one(
    make: Callable[..., KafkaQueue], admin: AIOKafkaAdminClient, kafka_namespace: str, url: str
) -> None:
    async with make(partitions=3) as queue:
        await queue.publish(T, ["a", "b"], key="example.com")
        await queue.publish(T, ["x"], priority=7)
        [meta] = await admin.describe_topics([f"{kafka_namespace}.{T}.0"])
        assert len(meta["partitions"]) == 3
        names = set(await admin.list_topics())
        assert {f"{kafka_namespace}.{T}.0", f"{kafka_namespace}.{T}.7"} <= names
        expected = (murmur2(b"example.com") & 0x7FFFFFFF) % 3  # what Kafka's Java client picks
        [a, b] = await take(queue, 2)
        assert [a.payload] == ["x"] and a.priority == 7
        assert b.payload == "a"
        published = {tp.partition for tp in queue._lanes.published if tp.topic.endswith(".0")}
        assert published == {expected}


async def test_a_retry_is_republished_with_an_attempt_header(make: Callable[..., KafkaQueue]) -> None:
    async with make() as queue:
        await queue.publish(T, ["a"])
        [first] = await take(queue)
        await queue.nack(first, delay=0.0)
        [again] = await take(queue, wait=5.0)
        assert (again.payload, again.attempt) == ("a", 2)
        [tp] = {tp for tp in queue._lanes.published}
        records = await read_partition(queue.url, tp.topic, tp.partition)
    assert [dict(r.headers).get("mocra-attempt") for r in records] == [None, b"2"]


async def test_commits_advance_only_past_contiguous_acks(
    make: Callable[..., KafkaQueue], admin: AIOKafkaAdminClient
) -> None:
    async with make() as queue:
        await queue.publish(T, ["a", "b", "c"])
        a, b, c = await take(queue, 3)
        [tp] = {tp for tp in queue._lanes.published}
        group = f"{queue.namespace}.{T}.workers"

        async def committed() -> int:
            offsets = await admin.list_consumer_group_offsets(group, partitions=[tp])
            return int(offsets[tp].offset)

        async def committed_is(value: int) -> bool:
            return await committed() == value

        assert await committed() in (-1, 0)  # nothing done yet
        await queue.ack([b, c])
        await anyio.sleep(0.2)  # long enough for a background commit to land, were one made
        assert await committed() in (-1, 0)
        await queue.ack([a])
        await eventually(lambda: committed_is(3))


async def test_an_ack_waits_for_two_state_writes_at_most(
    make: Callable[..., KafkaQueue], monkeypatch: pytest.MonkeyPatch
) -> None:
    from mocra_core.backends.kafka._state import StateLog

    write = StateLog.write
    waited: list[float] = []

    async def slow(self: StateLog, states: Any) -> None:
        await anyio.sleep(0.05)  # a slow broker: acks keep arriving while a write is in flight
        await write(self, states)

    async def ack(delivery: Delivery) -> None:
        start = anyio.current_time()
        await queue.ack([delivery])
        waited.append(anyio.current_time() - start)

    async with make() as queue:
        await queue.publish(T, [str(n) for n in range(20)])
        deliveries = await take(queue, 20)
        monkeypatch.setattr(StateLog, "write", slow)
        async with anyio.create_task_group() as tg:
            for delivery in deliveries:  # one ack every 10 ms, 5 per write
                tg.start_soon(ack, delivery)
                await anyio.sleep(0.01)
        # the write in flight, then the one its ack shares with the others that came meanwhile (a queue of
        # acks each writing in turn made the last of them wait for every write before it: 0.25 s and more)
        assert max(waited) < 0.2
        assert await queue.pending(T) == 0


async def test_concurrent_produces_share_a_request_and_get_their_own_offsets(
    make: Callable[..., KafkaQueue],
) -> None:
    async with make() as queue:
        await queue.publish(T, ["warm-up"])  # creates the lane topics
        wire = queue._wire
        [name] = {tp.topic for tp in queue._lanes.published}
        client = wire._client
        assert client is not None
        requests = 0
        send = client.send

        async def counted(node: int, request: Any) -> Any:
            nonlocal requests
            requests += 1
            return await send(node, request)

        client.send = counted  # type: ignore[method-assign]
        ends: dict[int, int] = {}

        async def produce(n: int) -> None:
            records = [(None, f"{n}-{i}".encode(), []) for i in range(n % 3 + 1)]
            ends[n] = await wire.produce(name, n % 2, records)  # two partitions of one broker

        async with anyio.create_task_group() as tg:
            for n in range(20):
                tg.start_soon(produce, n)
        assert requests <= 2  # the first alone, the 19 that came while it was on the wire together
        for partition in (0, 1):
            order = sorted((n for n in ends if n % 2 == partition), key=ends.__getitem__)
            assert order == list(range(partition, 20, 2))  # in call order
            for before, after in itertools.pairwise(order):
                assert ends[after] - ends[before] == after % 3 + 1  # each got the offset after its records


async def test_records_larger_than_a_batch_go_in_several_requests_in_order(
    make: Callable[..., KafkaQueue], url: str
) -> None:
    async with make() as queue:
        await queue.publish(T, ["warm-up"])
        wire = queue._wire
        [name] = {tp.topic for tp in queue._lanes.published}
        assert wire._client is not None
        producer = DirectProducer(wire._client, timeout=10, max_batch=4096)
        start = await producer.produce(name, 2, [(None, b"first", [])])
        records = [(None, f"{i:04d}".encode() * 100, []) for i in range(30)]  # ~12 kB: 3+ batches
        end = await producer.produce(name, 2, records)
        assert end == start + 30
        big = await producer.produce(name, 2, [(None, b"x" * 10_000, [])])  # alone in its batch
        assert big == end + 1
        values = [record.value for record in await read_partition(url, name, 2)]
        assert values[-31:-1] == [value for _, value, _ in records]


async def test_garbage_and_undecodable_records_go_to_the_dlq_and_consuming_goes_on(
    make: Callable[..., KafkaQueue], url: str, kafka_namespace: str
) -> None:
    async with make(codec=MsgpackCodec(Page)) as queue:
        await queue.publish(T, [Page("https://example.com/1")])
        lane = f"{kafka_namespace}.{T}.0"
        await produce_raw(url, lane, b"\xc1 not msgpack at all")
        await produce_raw(url, lane, None, key=b"a tombstone")
        not_a_page = msgspec.msgpack.encode({"id": "x1", "topic": T, "body": b"\x01", "created": 1.0})
        await produce_raw(url, lane, not_a_page)
        await queue.publish(T, [Page("https://example.com/2")])
        got: list[Delivery] = []
        with anyio.fail_after(10):
            while len(got) < 2:
                got += await take(queue, 10, wait=1)
        assert sorted(d.payload.url for d in got) == ["https://example.com/1", "https://example.com/2"]  # type: ignore[attr-defined]
        await queue.ack(got)

        async def buried() -> bool:  # the worker dead-letters them as it reads them
            return len(await queue.dead_letters(T)) == 3

        await eventually(buried)
        letters = await queue.dead_letters(T)
        by_reason = {letter.reason.split(" ")[0]: letter for letter in letters}
        assert set(by_reason) == {"undecodable", "empty"}
        assert {letter.payload for letter in letters} >= {b"\xc1 not msgpack at all", b"\x01"}
        assert any("envelope" in letter.reason for letter in letters)
        assert any(letter.id == "x1" and "payload" in letter.reason for letter in letters)
        assert await queue.pending(T) == 0


async def test_a_newer_minor_envelope_with_unknown_fields_is_read(
    make: Callable[..., KafkaQueue], url: str, kafka_namespace: str
) -> None:
    async with make() as queue:
        body = msgspec.msgpack.encode({"url": "https://example.com/"})
        newer = {"id": "n1", "topic": T, "body": body, "created": 1.5, "minor": 9, "trace": "", "attempt": 2}
        await queue.publish(T, ["first"])  # creates the lane topic
        await produce_raw(url, f"{kafka_namespace}.{T}.0", msgspec.msgpack.encode(newer), partition=3)
        got: list[Delivery] = []
        with anyio.fail_after(10):
            while len(got) < 2:
                got += await take(queue, 10, wait=1)
        newest = next(d for d in got if d.id == "n1")
        assert (newest.payload, newest.attempt, newest.created) == ({"url": "https://example.com/"}, 2, 1.5)


async def test_a_consumer_that_leaves_without_acking_hands_its_message_on_with_the_next_attempt(
    make: Callable[..., KafkaQueue],
) -> None:
    async with make() as first:
        await first.publish(T, ["x"], key="k")
        [leased] = await take(first)
        assert leased.attempt == 1
    # closed without acking: the lease mark was committed, the offset was not
    async with make() as second:
        [again] = await take(second, wait=10)
        assert (again.id, again.payload, again.attempt) == (leased.id, "x", 2)
        await second.ack([again])
        assert await second.pending(T) == 0


async def test_dlq_and_pending_are_shared_by_every_worker(make: Callable[..., KafkaQueue]) -> None:
    async with make() as worker, make() as observer:
        await worker.publish(T, ["a", "b", "c"])
        assert await observer.pending(T) == 3  # no group yet: everything published
        a, b, c = await take(worker, 3)
        await worker.dead_letter(a, reason="bad")
        await worker.ack([b])

        async def observer_sees(count: int) -> bool:
            return await observer.pending(T) == count

        await eventually(lambda: observer_sees(1))  # c, leased by the worker (its offset is uncommitted)
        [letter] = await observer.dead_letters(T)
        assert (letter.id, letter.payload, letter.reason) == (a.id, "a", "bad")
        assert await observer.replay(T) == 1
        assert await worker.dead_letters(T) == []
        await worker.ack([c])
        [again] = await take(worker, wait=10)
        assert (again.id, again.attempt) == (a.id, 1)
        await worker.ack([again])
        await eventually(lambda: observer_sees(0))


async def test_workers_in_one_group_split_the_partitions_and_keys_stay_with_one(
    make: Callable[..., KafkaQueue],
) -> None:
    keys = [f"site{i}" for i in range(8)]
    async with make() as one, make() as two:
        async with anyio.create_task_group() as tg:  # both join the group
            tg.start_soon(take, one)
            tg.start_soon(take, two)

        async def split() -> bool:  # range assignor: partitions 0-1 of each lane to one, 2-3 to the other
            owned = [{tp.partition for tp in q._readers[(T, "workers")].parts} for q in (one, two)]
            return sorted(map(sorted, owned)) == [[0, 1], [2, 3]]

        await eventually(split, 20)
        for key in keys:
            await one.publish(T, [f"{key}/{n}" for n in range(3)], key=key)
        seen: dict[str, list[str]] = {"one": [], "two": []}

        async def work(name: str, queue: KafkaQueue) -> None:
            while sum(map(len, seen.values())) < 24:
                batch = await take(queue, 5, wait=0.2)
                seen[name] += [d.payload for d in batch]  # type: ignore[misc]
                await queue.ack(batch)

        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(work, "one", one)
                tg.start_soon(work, "two", two)
        everything = seen["one"] + seen["two"]
        assert seen["one"] and seen["two"]
        assert sorted(everything) == sorted(f"{key}/{n}" for key in keys for n in range(3))
        for key in keys:
            owners = {name for name, got in seen.items() if any(p.startswith(f"{key}/") for p in got)}
            assert len(owners) == 1, key
            assert [p for p in everything if p.startswith(f"{key}/")] == [f"{key}/{n}" for n in range(3)]

        async def nothing_pending() -> bool:  # `two` reads `one`'s partitions from its (background) commits
            return await two.pending(T) == 0

        await eventually(nothing_pending)


async def test_a_restarted_broker_is_reconnected_and_work_goes_on(
    own_tansu: Tansu, kafka_namespace: str, kafka_options: dict[str, Any]
) -> None:
    options = kafka_options | {"reconnect_timeout": 20}
    async with KafkaQueue(own_tansu.url, codec=MsgpackCodec(), namespace=kafka_namespace, **options) as queue:
        await queue.publish(T, ["before"])
        [before] = await take(queue)
        await queue.ack([before])
        admin = AIOKafkaAdminClient(bootstrap_servers=own_tansu.url.removeprefix("kafka://"))
        await admin.start()
        try:  # let the ack's commit land first: a commit retried across the restart can confuse tansu
            [tp] = queue._lanes.published
            group = f"{kafka_namespace}.{T}.workers"

            async def committed() -> bool:
                offsets = await admin.list_consumer_group_offsets(group, partitions=[tp])
                return bool(offsets[tp].offset == 1)

            await eventually(committed)
        finally:
            await admin.close()
        own_tansu.stop()
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(queue.publish, T, ["while down"])  # retried until the broker is back
                await anyio.sleep(0.3)
                own_tansu.start()  # same port, empty (memory storage): topics, groups and offsets are gone
            # tansu may lose records written while its clients re-create a topic: publish until one is read
            got: list[Delivery] = []
            for n in itertools.count():
                await queue.publish(T, [f"after {n}"])
                got += await take(queue, 10, wait=0.5)
                if any(str(d.payload).startswith("after") for d in got):
                    break
        await queue.ack(got)


async def test_a_lane_another_process_creates_is_consumed(make: Callable[..., KafkaQueue]) -> None:
    async with make() as worker, make() as other:
        await worker.publish(T, ["low"])
        [low] = await take(worker)
        await other.publish(T, ["urgent"], priority=9)  # a lane topic the worker has not seen
        with anyio.fail_after(20):  # found by the worker's periodic look (5 s), then a rebalance
            [urgent] = await take(worker, wait=15)
        assert (urgent.payload, urgent.priority) == ("urgent", 9)
        await worker.ack([low, urgent])


_CRASHING_WORKER = """
import sys, anyio
from mocra_core.queue import KafkaQueue, MsgpackCodec

async def main(url, namespace):
    options = {"namespace": namespace, "session_timeout": 2.0, "fetch_wait": 0.02}
    async with KafkaQueue(url, codec=MsgpackCodec(), **options) as q:
        found = []
        while len(found) < 3:
            found += await q.consume("fetch", group="workers", max_messages=3, wait=5)
        await q.ack([d for d in found if d.payload == "b"])  # out of order: the commit cannot move
        print(*(f"{d.id}:{d.attempt}" for d in found if d.payload != "b"), flush=True)
        await anyio.sleep_forever()  # killed here, two leases never acked

anyio.run(main, sys.argv[1], sys.argv[2])
"""


@pytest.mark.slow
async def test_a_killed_consumer_hands_on_what_it_leased_with_the_next_attempt_and_not_what_it_acked(
    make: Callable[..., KafkaQueue], url: str, kafka_namespace: str
) -> None:
    if KAFKA_URL_SET:
        pytest.skip("needs the short session timeout tansu accepts")
    async with make() as queue:
        await queue.publish(T, ["a", "b", "c"])  # one partition, in order
        command = [sys.executable, "-c", _CRASHING_WORKER, url, kafka_namespace]
        async with await anyio.open_process(command) as worker:
            assert worker.stdout is not None
            output = b""
            with anyio.fail_after(30):
                while not output.endswith(b"\n"):
                    output += await worker.stdout.receive()
            leased = dict(item.split(":") for item in output.decode().split())
            assert list(leased.values()) == ["1", "1"], output
            worker.kill()  # SIGKILL right after the ack: no close, no commit, no leaving the group
        got: list[Delivery] = []
        with anyio.fail_after(30):  # its partitions come back once its session times out
            while len(got) < 2:
                got += await take(queue, 3, wait=25)
        assert sorted((d.id, d.payload, d.attempt) for d in got) == [
            (id, payload, 2) for id, payload in zip(leased, ["a", "c"], strict=True)
        ]
        await queue.ack(got)
        assert await queue.pending(T) == 0  # "b" is not delivered again


async def test_common_lanes_exist_from_the_start_so_a_first_priority_costs_no_rebalance(
    make: Callable[..., KafkaQueue],
) -> None:
    async with make() as queue, make(lanes=(0,)) as lean:
        await take(queue, wait=0)  # joins the group
        reader = queue._readers[(T, "workers")]
        assert sorted(reader.lanes.values()) == [-1, 0, 1]
        generation = reader._generation
        await queue.publish(T, ["next page"], priority=1)
        with anyio.fail_after(5):
            [delivery] = await take(queue, wait=1)
        assert (delivery.payload, delivery.priority) == ("next page", 1)
        assert reader._generation == generation  # no rebalance
        await queue.ack([delivery])
        await lean.publish("other", ["x"])
        found = await lean._wire.list_topics(lean._names.prefix("other"))
        assert sorted(lanes_of(lean._names, "other", found).values()) == [0]  # `lanes` chooses them


@pytest.mark.parametrize("lanes", [(0, 1.5), ("1",), (2**63,)])
def test_a_lane_that_is_not_a_64_bit_int_is_refused_up_front(lanes: tuple[Any, ...]) -> None:
    with pytest.raises(ValueError, match="priority must be a 64-bit int"):
        KafkaQueue("kafka://127.0.0.1:9092", codec=MsgpackCodec(), lanes=lanes)
