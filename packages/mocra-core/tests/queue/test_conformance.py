"""The `QueueBackend` contract, run unchanged on every backend (see `BACKENDS` in conftest.py).

Only the public protocol and the constructor options `visibility_timeout` and `max_attempts` are used, and
time is real (short timeouts), so networked backends can run this suite as it is.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import anyio
import pytest

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from conftest import OpenBackend
    from mocra_core.queue import Delivery, QueueBackend

pytestmark = pytest.mark.anyio

T = "fetch"


@pytest.fixture
async def queue(open_backend: OpenBackend) -> AsyncIterator[QueueBackend]:
    async with open_backend(visibility_timeout=30.0, max_attempts=3) as q:
        yield q


async def take(queue: QueueBackend, n: int = 1, *, wait: float = 0.0, topic: str = T) -> list[Delivery]:
    return list(await queue.consume(topic, group="workers", max_messages=n, wait=wait))


async def test_round_trip(queue: QueueBackend) -> None:
    before = time.time()
    await queue.publish(T, [{"url": "https://example.com/", "depth": 1}])
    [d] = await take(queue)
    assert (d.topic, d.payload, d.key, d.priority, d.attempt) == (
        T,
        {"url": "https://example.com/", "depth": 1},
        None,
        0,
        1,
    )
    assert isinstance(d.id, str) and d.id
    assert before - 1 <= d.created <= time.time() + 1
    assert await take(queue) == []  # leased: not handed out twice
    await queue.ack([d])
    assert await queue.pending(T) == 0
    assert await take(queue) == []


async def test_ids_are_unique(queue: QueueBackend) -> None:
    await queue.publish(T, list(range(10)))
    await queue.publish(T, list(range(10)), key="k")
    deliveries = await take(queue, 100)
    assert len({d.id for d in deliveries}) == len(deliveries)


async def test_pending_counts_ready_delayed_and_leased_until_acked_or_dead(queue: QueueBackend) -> None:
    assert await queue.pending(T) == 0
    await queue.publish(T, ["a", "b", "c"])
    await queue.publish(T, ["later"], delay=60)
    assert await queue.pending(T) == 4
    a, b = await take(queue, 2)
    assert await queue.pending(T) == 4
    await queue.ack([a])
    assert await queue.pending(T) == 3
    await queue.ack([a])  # twice: no effect
    assert await queue.pending(T) == 3
    await queue.nack(b)
    assert await queue.pending(T) == 3
    rest = {d.payload: d for d in await take(queue, 5)}
    assert sorted(rest) == ["b", "c"]  # type: ignore[type-var]
    b2, c = rest["b"], rest["c"]
    await queue.dead_letter(b2, reason="bad")
    assert await queue.pending(T) == 2
    await queue.ack([c, c])
    assert await queue.pending(T) == 1  # the delayed one
    assert await queue.pending("other") == 0


async def test_batch_publish_keeps_order(queue: QueueBackend) -> None:
    await queue.publish(T, [f"m{i}" for i in range(7)])
    await queue.publish(T, ["k0", "k1"], key="k")
    first = await take(queue, 5)
    assert [d.payload for d in first] == ["m0", "m1", "m2", "m3", "m4"]
    rest = await take(queue, 10)
    assert [d.payload for d in rest] == ["m5", "m6", "k0"]  # k1 waits for k0's lease
    assert all(d.key == "k" for d in rest[2:])
    await queue.ack([*first, *rest])
    [k1] = await take(queue, 10)
    assert (k1.payload, k1.key) == ("k1", "k")


async def test_empty_publish_does_nothing(queue: QueueBackend) -> None:
    await queue.publish(T, [])
    assert await queue.pending(T) == 0


async def test_priority_lanes_highest_first_fifo_within(queue: QueueBackend) -> None:
    await queue.publish(T, ["a", "b"])
    await queue.publish(T, ["c", "d"], priority=5)
    await queue.publish(T, ["e"], priority=1)
    await queue.publish(T, ["f"], priority=-3)
    await queue.publish(T, ["g"], priority=5)
    got = await take(queue, 10)
    assert [d.payload for d in got] == ["c", "d", "g", "e", "a", "b", "f"]
    assert [d.priority for d in got] == [5, 5, 5, 1, 0, 0, -3]


async def test_max_messages_bounds_a_batch(queue: QueueBackend) -> None:
    await queue.publish(T, list(range(5)))
    assert [d.payload for d in await take(queue, 2)] == [0, 1]
    assert [d.payload for d in await take(queue, 2)] == [2, 3]
    assert [d.payload for d in await take(queue, 2)] == [4]


async def test_topics_are_separate(queue: QueueBackend) -> None:
    await queue.publish("a", ["for a"])
    assert await take(queue, topic="b") == []
    [d] = await take(queue, topic="a")
    assert (d.topic, d.payload) == ("a", "for a")


async def test_consume_returns_at_once_when_something_is_ready(queue: QueueBackend) -> None:
    await queue.publish(T, ["x"])
    with anyio.fail_after(5):
        got = await take(queue, 10, wait=30)  # does not wait to fill the batch
    assert [d.payload for d in got] == ["x"]


async def test_consume_waits_then_returns_empty(queue: QueueBackend) -> None:
    start = anyio.current_time()
    assert await take(queue, wait=0.2) == []
    assert anyio.current_time() - start >= 0.19


async def test_consume_wakes_when_another_task_publishes(queue: QueueBackend) -> None:
    got: list[Delivery] = []

    async def consumer() -> None:
        got.extend(await take(queue, wait=30))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consumer)
            await anyio.sleep(0.05)
            await queue.publish(T, ["hello"])
    assert [d.payload for d in got] == ["hello"]


async def test_every_waiting_consumer_is_woken_by_a_batch(queue: QueueBackend) -> None:
    got: list[Delivery] = []

    async def consumer() -> None:
        got.extend(await take(queue, wait=30))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for _ in range(5):
                tg.start_soon(consumer)
            await anyio.sleep(0.05)
            await queue.publish(T, list(range(5)))
    assert sorted(d.payload for d in got) == [0, 1, 2, 3, 4]  # type: ignore[type-var]


async def test_delayed_publish_is_not_ready_before_its_delay(queue: QueueBackend) -> None:
    start = anyio.current_time()
    await queue.publish(T, ["later"], delay=0.3)
    assert await take(queue) == []
    assert await queue.pending(T) == 1
    with anyio.fail_after(5):
        [d] = await take(queue, wait=30)  # wakes when it becomes due, not when `wait` ends
    assert anyio.current_time() - start >= 0.29
    assert (d.payload, d.attempt) == ("later", 1)


async def test_nack_redelivers_after_the_delay_with_next_attempt(queue: QueueBackend) -> None:
    await queue.publish(T, ["x"])
    [first] = await take(queue)
    start = anyio.current_time()
    await queue.nack(first, delay=0.3, reason="HTTP 503")
    assert await take(queue) == []
    assert await queue.pending(T) == 1
    with anyio.fail_after(5):
        [again] = await take(queue, wait=30)
    assert anyio.current_time() - start >= 0.29
    assert (again.id, again.payload, again.attempt) == (first.id, "x", 2)
    assert again.created == first.created


async def test_nack_without_delay_is_ready_at_once(queue: QueueBackend) -> None:
    await queue.publish(T, ["x"])
    [first] = await take(queue)
    await queue.nack(first)
    [again] = await take(queue)
    assert (again.id, again.attempt) == (first.id, 2)


async def test_nack_at_max_attempts_dead_letters_with_reason(queue: QueueBackend) -> None:  # max_attempts=3
    await queue.publish(T, ["x"], key="k", priority=2)
    for attempt in (1, 2):
        [d] = await take(queue)
        assert d.attempt == attempt
        await queue.nack(d, reason=f"failure {attempt}")
    [last] = await take(queue)
    assert last.attempt == 3
    before = time.time()
    await queue.nack(last, delay=0.0, reason="HTTP 500")
    assert await take(queue) == []
    assert await queue.pending(T) == 0
    [dead] = await queue.dead_letters(T)
    assert (dead.id, dead.topic, dead.payload, dead.key, dead.attempt) == (last.id, T, "x", "k", 3)
    assert "HTTP 500" in dead.reason
    assert before - 1 <= dead.failed_at <= time.time() + 1


async def test_dead_letter_goes_straight_to_the_dlq(queue: QueueBackend) -> None:
    await queue.publish(T, ["a", "b"])
    a, b = await take(queue, 2)
    await queue.dead_letter(a, reason="callback raised ValueError")
    assert await queue.pending(T) == 1
    [dead] = await queue.dead_letters(T)
    assert (dead.id, dead.payload, dead.attempt, dead.reason) == (a.id, "a", 1, "callback raised ValueError")
    assert await queue.dead_letters("other") == []
    await queue.ack([b])


async def test_dead_letters_read_oldest_first_and_replay(queue: QueueBackend) -> None:
    await queue.publish(T, ["a", "b", "c"])
    await queue.publish(T, ["p"], priority=9, key="pk")
    deliveries = await take(queue, 4)
    for d in deliveries:
        await queue.dead_letter(d, reason=f"bad {d.payload}")
    letters = await queue.dead_letters(T)
    assert [(x.payload, x.reason) for x in letters] == [
        ("p", "bad p"),
        ("a", "bad a"),
        ("b", "bad b"),
        ("c", "bad c"),
    ]
    assert [x.payload for x in await queue.dead_letters(T, limit=2)] == ["p", "a"]
    assert await queue.dead_letters(T) == letters  # reading does not remove
    by_payload = {x.payload: x.id for x in letters}

    assert await queue.replay(T, [by_payload["b"], "no-such-id"]) == 1
    assert await queue.pending(T) == 1
    assert [x.payload for x in await queue.dead_letters(T)] == ["p", "a", "c"]
    [b] = await take(queue)
    assert (b.id, b.payload, b.attempt) == (by_payload["b"], "b", 1)
    await queue.ack([b])

    assert await queue.replay(T) == 3
    assert await queue.dead_letters(T) == []
    assert await queue.pending(T) == 3
    again = await take(queue, 10)
    assert [(d.payload, d.attempt, d.key, d.priority) for d in again] == [
        ("p", 1, "pk", 9),
        ("a", 1, None, 0),
        ("c", 1, None, 0),
    ]
    assert await queue.replay(T) == 0


async def test_replayed_messages_wake_a_waiting_consumer(queue: QueueBackend) -> None:
    await queue.publish(T, ["x"])
    [d] = await take(queue)
    await queue.dead_letter(d, reason="bad")
    got: list[Delivery] = []

    async def consumer() -> None:
        got.extend(await take(queue, wait=30))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consumer)
            await anyio.sleep(0.05)
            assert await queue.replay(T) == 1
    assert [(x.payload, x.attempt) for x in got] == [("x", 1)]


async def test_unacked_lease_expires_to_another_consumer_and_stale_calls_are_ignored(
    open_backend: OpenBackend,
) -> None:
    async with open_backend(visibility_timeout=0.3, max_attempts=5) as queue:
        await queue.publish(T, ["x"])
        [first] = await take(queue)
        start = anyio.current_time()
        got: list[Delivery] = []

        async def other_consumer() -> None:
            got.extend(await take(queue, wait=30))

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(other_consumer)
        [again] = got
        assert anyio.current_time() - start >= 0.25
        assert (again.id, again.payload, again.attempt) == (first.id, "x", 2)

        await queue.ack([first])  # stale: its lease expired and the message was handed out again
        await queue.nack(first)
        await queue.dead_letter(first, reason="too late")
        assert await queue.pending(T) == 1
        assert await queue.dead_letters(T) == []
        assert await take(queue) == []  # still leased by `again`
        await queue.ack([again])
        assert await queue.pending(T) == 0
        await queue.ack([again, first])
        assert await queue.pending(T) == 0


async def test_expired_lease_at_max_attempts_goes_to_the_dlq(open_backend: OpenBackend) -> None:
    async with open_backend(visibility_timeout=0.2, max_attempts=1) as queue:
        await queue.publish(T, ["x"])
        [d] = await take(queue)
        assert await take(queue, wait=0.6) == []
        [dead] = await queue.dead_letters(T)
        assert (dead.id, dead.payload, dead.attempt) == (d.id, "x", 1)
        assert dead.reason
        assert await queue.pending(T) == 0


async def test_competing_consumers_share_the_load_and_get_each_message_once(queue: QueueBackend) -> None:
    await queue.publish(T, list(range(40)))
    seen: dict[str, list[object]] = {"a": [], "b": []}

    async def worker(name: str) -> None:
        while batch := await take(queue, 3, wait=0.3):
            for d in batch:
                seen[name].append(d.payload)
                await anyio.sleep(0.001)  # some work
            await queue.ack(batch)

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(worker, "a")
            tg.start_soon(worker, "b")
    assert seen["a"] and seen["b"]
    assert sorted(seen["a"] + seen["b"]) == list(range(40))  # type: ignore[type-var]
    assert await queue.pending(T) == 0


async def test_one_key_is_processed_in_order_by_one_consumer_at_a_time(queue: QueueBackend) -> None:
    await queue.publish(T, [f"k{i}" for i in range(8)], key="site")
    await queue.publish(T, [f"u{i}" for i in range(8)])
    await queue.publish(T, [f"o{i}" for i in range(4)], key="other")
    in_flight = 0
    most = 0
    order: list[object] = []
    unkeyed: list[object] = []

    async def worker() -> None:
        nonlocal in_flight, most
        while batch := await take(queue, 4, wait=0.3):
            keyed = [d for d in batch if d.key == "site"]
            in_flight += len(keyed)
            most = max(most, in_flight)
            await anyio.sleep(0.002 * len(batch))  # some work
            order.extend(d.payload for d in keyed)
            unkeyed.extend(d.payload for d in batch if d.key is None)
            in_flight -= len(keyed)
            await queue.ack(batch)

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(worker)
            tg.start_soon(worker)
    assert most == 1
    assert order == [f"k{i}" for i in range(8)]
    assert sorted(unkeyed) == [f"u{i}" for i in range(8)]  # type: ignore[type-var]
    assert await queue.pending(T) == 0


async def test_a_leased_key_holds_back_only_its_own_messages(queue: QueueBackend) -> None:
    await queue.publish(T, ["k1", "k2"], key="k")
    await queue.publish(T, ["j1"], key="j")
    await queue.publish(T, ["u1"])
    [k1] = await take(queue)
    assert k1.payload == "k1"
    others = await take(queue, 10)
    assert [d.payload for d in others] == ["j1", "u1"]
    await queue.ack(others)
    assert await take(queue, 10) == []
    await queue.ack([k1])
    [k2] = await take(queue, 10)
    assert k2.payload == "k2"


@pytest.mark.parametrize("end", ["nack", "dead_letter", "ack"])
async def test_a_key_is_released_by_every_end_of_its_lease(queue: QueueBackend, end: str) -> None:
    await queue.publish(T, ["k1", "k2"], key="k")
    [k1] = await take(queue)
    assert await take(queue, 10) == []
    if end == "nack":
        await queue.nack(k1)
    elif end == "dead_letter":
        await queue.dead_letter(k1, reason="bad")
    else:
        await queue.ack([k1])
    got = await take(queue, 10)
    assert len(got) == 1 and got[0].key == "k"  # one of them again, never both


async def test_a_key_waiting_consumer_is_woken_when_the_key_is_released(queue: QueueBackend) -> None:
    await queue.publish(T, ["k1", "k2"], key="k")
    [k1] = await take(queue)
    got: list[Delivery] = []

    async def consumer() -> None:
        got.extend(await take(queue, wait=30))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consumer)
            await anyio.sleep(0.05)
            await queue.ack([k1])
    assert [d.payload for d in got] == ["k2"]


async def test_closed_queue_refuses_calls_and_wakes_waiting_consumers(queue: QueueBackend) -> None:
    errors: list[BaseException] = []

    async def consumer() -> None:
        try:
            await take(queue, wait=30)
        except anyio.ClosedResourceError as exc:
            errors.append(exc)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consumer)
            await anyio.sleep(0.05)
            await queue.aclose()
    assert len(errors) == 1
    with pytest.raises(anyio.ClosedResourceError):
        await queue.publish(T, ["x"])
    with pytest.raises(anyio.ClosedResourceError):
        await take(queue)
    await queue.aclose()  # idempotent
