"""The Kafka reader's fetch wait: short, doubled while fetches far behind answer short.

`FetchWait` alone (no broker), then on tansu: a reader far behind on a short partition keeps its short
wait, and one starting with 1-ms fetches on a long partition (tansu answers those with nothing once a
partition holds a few thousand record batches: the stall of the soak in `benchmarks/README.md`) grows
its wait and drains it.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import anyio
import msgspec
import pytest
from aiokafka import AIOKafkaProducer

from mocra_core.backends.kafka._fetch_wait import SHORT_ANSWER, SHORT_LIMIT, FetchWait, PartitionLag
from mocra_core.backends.kafka._reader import PARTITION_FETCH_BYTES
from mocra_core.config import KafkaQueueSettings
from mocra_core.queue import KafkaQueue, MsgpackCodec
from mocra_core.queue._envelope import Envelope, pack

if TYPE_CHECKING:
    from mocra_core.backends.kafka._driver import TopicPartition
    from mocra_core.backends.kafka._reader import Reader

T = "fetch"
A: TopicPartition = ("t", 0)  # type: ignore[assignment]  # any hashable key does for FetchWait
B: TopicPartition = ("t", 1)  # type: ignore[assignment]


def lag(highwater: int | None, polled: int | None, next_: int) -> PartitionLag:
    return PartitionLag(highwater=highwater, polled=polled, next=next_)


# ---------------------------------------------------------------------- FetchWait, no broker


def test_the_wait_stays_short_while_answers_bring_records_behind_or_not() -> None:
    wait = FetchWait(low=0.01, high=1.0)
    assert wait.observe({}) == 0.01
    assert wait.observe({A: lag(None, None, 0)}) == 0.01  # not fetched yet
    for step in range(1, 20):  # far behind, and each answer brings SHORT_ANSWER records or more
        assert wait.observe({A: lag(100_000, step, step * SHORT_ANSWER), B: lag(3, step, 3)}) == 0.01
    assert wait.behind
    for _ in range(20):  # no new answer meanwhile (a fetch in flight)
        wait.observe({A: lag(100_000, 20, 19 * SHORT_ANSWER)})
    assert wait.seconds == 0.01
    assert wait.observe({A: lag(19 * SHORT_ANSWER, 21, 19 * SHORT_ANSWER)}) == 0.01
    assert not wait.behind


def test_the_wait_doubles_while_answers_come_short_far_behind_up_to_high() -> None:
    wait = FetchWait(low=0.01, high=0.03)
    wait.observe({A: lag(5_000, 1, 0)})
    for polled in range(2, 2 + SHORT_LIMIT):  # new answers with fewer than SHORT_ANSWER records
        wait.observe({A: lag(5_000, polled, (polled - 1) * (SHORT_ANSWER // 2))})
    assert wait.seconds == 0.02
    for polled in range(10, 10 + 3 * SHORT_LIMIT):
        wait.observe({A: lag(5_000, polled, 200)})
    assert wait.seconds == 0.03  # capped
    assert wait.observe({A: lag(5_000, 50, 5_000)}) == 0.03  # caught up: a grown wait is kept


def test_short_answers_count_only_in_a_row_and_only_far_behind() -> None:
    wait = FetchWait(low=0.01, high=1.0)
    wait.observe({A: lag(5_000, 1, 0)})
    polled = 2
    for _ in range(10):  # short, short, then one with records: never three in a row
        for got in (0, 0, SHORT_ANSWER):
            wait.observe({A: lag(5_000 + polled * SHORT_ANSWER, polled, got + wait._seen[A].next)})
            polled += 1
    assert wait.seconds == 0.01
    for polled in range(100, 110):  # behind by less than SHORT_ANSWER: a short answer says nothing
        wait.observe({B: lag(SHORT_ANSWER - 1, polled, 0)})
    assert wait.seconds == 0.01


@pytest.mark.parametrize(("low", "high"), [(0, 1), (0.1, 0.05)])
def test_bounds_out_of_order_are_refused(low: float, high: float) -> None:
    with pytest.raises(ValueError, match="fetch_wait_min <= fetch_wait_max"):
        FetchWait(low=low, high=high)
    with pytest.raises(ValueError, match="fetch_wait_min"):
        KafkaQueueSettings(fetch_wait_min=low, fetch_wait_max=high)


# ---------------------------------------------------------------------- on tansu


def _fetcher_wait_ms(reader: Reader) -> int:
    consumer: Any = reader._consumer
    return int(consumer._fetcher._fetch_max_wait_ms)


@pytest.mark.anyio
async def test_a_reader_far_behind_on_a_short_partition_keeps_its_short_wait(
    kafka_url: str, kafka_namespace: str
) -> None:
    options: dict[str, Any] = {"session_timeout": 2.0, "partitions": 1, "fetch_wait_min": 0.004}
    async with KafkaQueue(kafka_url, codec=MsgpackCodec(), namespace=kafka_namespace, **options) as queue:
        for start in range(0, 3_000, 500):  # 6 record batches: a short partition, 3,000 records behind
            await queue.publish(T, list(range(start, start + 500)))
        done = 0
        with anyio.fail_after(10):
            while done < 3_000:
                batch = await queue.consume(T, group="g", max_messages=1_000, wait=5)
                await queue.ack(batch)
                done += len(batch)
        reader = queue._readers[(T, "g")]
        assert (reader._wait.seconds, _fetcher_wait_ms(reader)) == (0.004, 4)


DEEP = 5_000  # record batches in one partition: tansu answers 1-ms fetches at their offset empty


@pytest.mark.anyio
async def test_a_reader_with_1ms_fetches_grows_its_wait_and_drains_a_long_partition(
    kafka_url: str, kafka_namespace: str
) -> None:
    codec = MsgpackCodec()
    options: dict[str, Any] = {"session_timeout": 2.0, "partitions": 1}
    options["fetch_wait_min"] = 0.001  # the wait has to grow for the reader to read the partition
    async with KafkaQueue(kafka_url, codec=codec, namespace=kafka_namespace, **options) as queue:
        await queue.publish(T, ["seed"])  # creates the lane topics
        producer = AIOKafkaProducer(
            bootstrap_servers=kafka_url.removeprefix("kafka://"), linger_ms=0, max_batch_size=400
        )
        await producer.start()
        try:
            pad = "x" * 300  # one record per batch: tansu's cost grows with the batches of a partition
            for i in range(DEEP):
                env = Envelope(id=f"m{i}", topic=T, body=codec.encode(f"{i}{pad}"), created=time.time())
                sent = await producer.send(queue._names.lane(T, 0), pack(env), partition=0)
                if i % 500 == 0:
                    await sent
            await producer.flush()
        finally:
            await producer.stop()

        seen: set[str] = set()
        with anyio.fail_after(20):
            while len(seen) < DEEP + 1:
                batch = await queue.consume(T, group="g", max_messages=1_000, wait=5)
                seen.update(msgspec.convert(d.payload, str).rstrip("x") for d in batch)
                await queue.ack(batch)
        assert seen == {"seed", *map(str, range(DEEP))}
        reader = queue._readers[(T, "g")]
        assert reader._wait.seconds > 0.001  # its fetches far behind answered short: the wait grew
        assert _fetcher_wait_ms(reader) == round(reader._wait.seconds * 1000)


@pytest.mark.anyio
async def test_a_record_batch_larger_than_a_partition_fetch_comes_whole(
    kafka_url: str, kafka_namespace: str
) -> None:
    # ~700 KB published as one call (one record batch per partition, up to 1 MiB): more than a
    # reader's fetch asks of a partition (`PARTITION_FETCH_BYTES`), and nothing is skipped.
    assert PARTITION_FETCH_BYTES < 700_000
    options: dict[str, Any] = {"session_timeout": 2.0, "partitions": 1, "fetch_wait_min": 0.01}
    async with KafkaQueue(kafka_url, codec=MsgpackCodec(), namespace=kafka_namespace, **options) as queue:
        await queue.publish(T, [f"{n:06d}" + "x" * 700 for n in range(1_000)])
        got: list[str] = []
        with anyio.fail_after(10):
            while len(got) < 1_000:
                batch = await queue.consume(T, group="g", max_messages=1_000, wait=5)
                await queue.ack(batch)
                got.extend(d.payload[:6] for d in batch)
        assert sorted(got) == [f"{n:06d}" for n in range(1_000)]
