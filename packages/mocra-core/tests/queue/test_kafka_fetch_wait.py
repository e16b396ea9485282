"""The Kafka reader's fetch wait: short when caught up, long when behind, longer while fetches answer empty.

`FetchWait` alone (no broker), then on tansu: the wait a reader chooses from its lag, and a deep topic
that a reader starting with 1-ms fetches still drains (tansu answers those empty once a partition holds
a few thousand record batches: the stall of the soak in `benchmarks/README.md`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import anyio
import msgspec
import pytest
from aiokafka import AIOKafkaProducer

from mocra_core.backends.kafka._fetch_wait import SHORT_LIMIT, FetchWait, PartitionLag
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


def test_caught_up_is_short_and_behind_is_long() -> None:
    wait = FetchWait(low=0.005, start=0.05, high=1.0)
    assert wait.observe({}) == 0.05  # nothing assigned yet: as if behind
    assert wait.observe({A: lag(None, None, 0)}) == 0.05  # not fetched yet
    assert wait.observe({A: lag(10, 1, 10), B: lag(3, 1, 3)}) == 0.005
    assert wait.observe({A: lag(10, 2, 10), B: lag(4, 2, 3)}) == 0.05  # B's high watermark moved on
    assert wait.observe({A: lag(10, 3, 10), B: lag(4, 3, 4)}) == 0.005


def test_behind_wait_doubles_while_answers_come_empty_up_to_high() -> None:
    wait = FetchWait(low=0.005, start=0.05, high=0.15)
    assert wait.observe({A: lag(500, 1, 0)}) == 0.05
    for polled in range(2, 2 + SHORT_LIMIT):  # new answers, no record handed over
        wait.observe({A: lag(500, polled, 0)})
    assert wait.seconds == 0.1
    for polled in range(10, 10 + 3 * SHORT_LIMIT):
        wait.observe({A: lag(500, polled, 0)})
    assert wait.seconds == 0.15  # capped
    assert wait.observe({A: lag(500, 30, 500)}) == 0.005  # caught up: short again
    assert wait.observe({A: lag(501, 31, 500)}) == 0.15  # behind again: the wait that worked is kept


def test_answers_with_records_or_no_new_answer_do_not_grow_the_wait() -> None:
    wait = FetchWait(low=0.005, start=0.05, high=1.0)
    wait.observe({A: lag(10_000, 1, 0)})
    for step in range(1, 20):  # records come with every answer
        wait.observe({A: lag(10_000, 1 + step, step * 100)})
    for _ in range(20):  # no new answer meanwhile (the fetch is in flight)
        wait.observe({A: lag(10_000, 20, 1_900)})
    assert wait.seconds == 0.05


def test_empty_answers_to_short_fetches_do_not_grow_the_wait() -> None:
    wait = FetchWait(low=0.005, start=0.05, high=1.0)
    wait.observe({A: lag(10, 1, 10)})
    assert wait.seconds == 0.005
    for polled in range(2, 10):  # answers to the short fetches in flight when the reader fell behind
        wait.observe({A: lag(20, polled, 10)})
        wait.seconds = wait.low  # as if each were one of them
    assert wait.behind == 0.05


@pytest.mark.parametrize(("low", "start", "high"), [(0, 0.05, 1), (0.1, 0.05, 1), (0.005, 2, 1)])
def test_bounds_out_of_order_are_refused(low: float, start: float, high: float) -> None:
    with pytest.raises(ValueError, match="fetch_wait_min <= fetch_wait <= fetch_wait_max"):
        FetchWait(low=low, start=start, high=high)
    with pytest.raises(ValueError, match="fetch_wait"):
        KafkaQueueSettings(fetch_wait_min=low, fetch_wait=start, fetch_wait_max=high)


# ---------------------------------------------------------------------- on tansu


async def _wait_for(reader: Reader, seconds: float) -> None:
    with anyio.fail_after(5):
        while reader._wait.seconds != seconds:  # noqa: ASYNC110  (the reader sets no event for this)
            await anyio.sleep(0.02)


def _fetcher_wait_ms(reader: Reader) -> int:
    consumer: Any = reader._consumer
    return int(consumer._fetcher._fetch_max_wait_ms)


DEEP = 5_000  # record batches in one partition: tansu answers 1-ms fetches at their offset empty


@pytest.mark.anyio
async def test_a_reader_with_1ms_fetches_drains_a_deep_partition_then_fetches_short(
    kafka_url: str, kafka_namespace: str
) -> None:
    codec = MsgpackCodec()
    options: dict[str, Any] = {"session_timeout": 2.0, "partitions": 1}
    options |= {"fetch_wait_min": 0.001, "fetch_wait": 0.001}  # the wait has to grow to read the partition
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
        assert reader._wait.behind > 0.001  # its fetches behind answered empty: the wait grew
        await _wait_for(reader, 0.001)  # caught up: short again
        assert _fetcher_wait_ms(reader) == 1
