"""What the in-process backends (memory, LMDB) promise beyond the contract: an injectable clock, messages
that come back keep their place, one group per topic, argument checks."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
import pytest

from mocra_core.queue import MemoryQueue

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from conftest import FakeClock, OpenBackend
    from mocra_core.queue import Delivery, QueueBackend

pytestmark = pytest.mark.anyio

T = "fetch"
VISIBILITY = 60.0


@pytest.fixture(params=["memory", "lmdb"])
def backend(request: pytest.FixtureRequest) -> str:
    """Only the in-process backends (overrides conftest's list of every backend)."""
    name: str = request.param
    return name


@pytest.fixture
async def queue(open_backend: OpenBackend, clock: FakeClock) -> AsyncIterator[QueueBackend]:
    async with open_backend(visibility_timeout=VISIBILITY, max_attempts=3, clock=clock) as q:
        yield q


async def take(queue: QueueBackend, n: int = 1, *, wait: float = 0.0) -> list[Delivery]:
    return list(await queue.consume(T, group="workers", max_messages=n, wait=wait))


async def test_lease_expires_when_the_injected_clock_passes_the_visibility_timeout(
    queue: QueueBackend, clock: FakeClock
) -> None:
    await queue.publish(T, ["x"])
    [first] = await take(queue)
    clock.advance(VISIBILITY - 0.001)
    assert await take(queue) == []
    clock.advance(0.002)
    [again] = await take(queue)
    assert (again.id, again.attempt) == (first.id, 2)


async def test_nack_delay_follows_the_injected_clock(queue: QueueBackend, clock: FakeClock) -> None:
    await queue.publish(T, ["x"])
    [first] = await take(queue)
    await queue.nack(first, delay=5)
    clock.advance(4.9)
    assert await take(queue) == []
    clock.advance(0.2)
    [again] = await take(queue)
    assert again.attempt == 2


async def test_expiry_and_dead_letters_at_max_attempts(queue: QueueBackend, clock: FakeClock) -> None:
    await queue.publish(T, ["x"])
    for attempt in (1, 2, 3):
        [d] = await take(queue)
        assert d.attempt == attempt
        clock.advance(VISIBILITY + 1)
    assert await take(queue) == []
    [dead] = await queue.dead_letters(T)
    assert dead.attempt == 3
    assert "lease expired" in dead.reason and "attempt 3 of 3" in dead.reason
    assert await queue.pending(T) == 0


@pytest.mark.parametrize("due", ["lease", "delay"])
async def test_a_waiting_consumer_wakes_when_the_clock_makes_something_due(
    queue: QueueBackend, clock: FakeClock, due: str
) -> None:
    if due == "lease":
        await queue.publish(T, ["x"])
        await take(queue)
    else:
        await queue.publish(T, ["x"], delay=100)
    got: list[Delivery] = []

    async def consumer() -> None:
        got.extend(await take(queue, wait=30))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consumer)
            await anyio.sleep(0.1)
            assert got == []
            clock.advance(max(VISIBILITY, 100) + 1)
    assert [d.payload for d in got] == ["x"]


@pytest.mark.parametrize("source", ["publish", "nack"])
async def test_something_due_later_is_watched_even_when_consumers_were_already_waiting(
    queue: QueueBackend, clock: FakeClock, source: str
) -> None:
    if source == "nack":
        await queue.publish(T, ["later"])
        [leased] = await take(queue)
    got: list[Delivery] = []

    async def consumer() -> None:
        got.extend(await take(queue, wait=30))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consumer)
            await anyio.sleep(0.05)
            if source == "nack":  # nothing becomes ready: the waiter is not woken, but must keep the clock
                await queue.nack(leased, delay=10)
            else:
                await queue.publish(T, ["later"], delay=10)
            await anyio.sleep(0.1)
            clock.advance(11)
    assert [d.payload for d in got] == ["later"]


async def test_expired_and_nacked_messages_keep_their_place(queue: QueueBackend, clock: FakeClock) -> None:
    await queue.publish(T, ["a", "b", "c"])
    [a] = await take(queue)
    clock.advance(VISIBILITY + 1)
    [a2, b] = await take(queue, 2)
    assert (a2.payload, a2.attempt, b.payload) == ("a", 2, "b")
    await queue.nack(b)
    await queue.nack(a2)
    assert [(d.payload, d.attempt) for d in await take(queue, 5)] == [("a", 3), ("b", 2), ("c", 1)]


async def test_delayed_messages_join_the_tail_when_due(queue: QueueBackend, clock: FakeClock) -> None:
    await queue.publish(T, ["early"], delay=1)
    await queue.publish(T, ["x"])
    clock.advance(2)
    await queue.publish(T, ["y"])
    assert [d.payload for d in await take(queue, 5)] == ["x", "early", "y"]


async def test_parked_messages_of_a_key_come_back_in_order(queue: QueueBackend) -> None:
    await queue.publish(T, ["k1", "k2", "k3"], key="k")
    await queue.publish(T, ["k4"], key="k", priority=1)
    [k4] = await take(queue)
    assert k4.payload == "k4"
    assert await take(queue, 10) == []  # k1..k3 are parked behind k4's lease
    for expected in ("k1", "k2", "k3"):
        await queue.ack([k4])
        [k4] = await take(queue, 10)
        assert k4.payload == expected
    assert await take(queue, 10) == []


async def test_a_wakeup_is_passed_on_when_the_woken_consumer_is_cancelled(queue: QueueBackend) -> None:
    got: list[Delivery] = []
    first_scope = anyio.CancelScope()

    async def first() -> None:
        with first_scope:
            got.extend(await take(queue, wait=30))

    async def second() -> None:
        got.extend(await take(queue, wait=30))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(first)
            await anyio.sleep(0.05)
            tg.start_soon(second)
            await anyio.sleep(0.05)
            first_scope.cancel()  # `first` is being cancelled but has not run yet ...
            await queue.publish(T, ["x"])  # ... when the message wakes it (it waited longest)
    assert [d.payload for d in got] == ["x"]
    assert await queue.pending(T) == 1


async def test_cancelled_consume_leases_nothing(queue: QueueBackend) -> None:
    with anyio.move_on_after(0.05):
        await take(queue, wait=30)
    await queue.publish(T, ["x"])
    with anyio.CancelScope() as scope:
        scope.cancel()
        await take(queue)
    [d] = await take(queue)
    assert d.attempt == 1


async def test_one_group_per_topic(queue: QueueBackend) -> None:
    await queue.consume(T, group="download", wait=0)
    with pytest.raises(ValueError, match="consumed by group 'download', not 'parse'"):
        await queue.consume(T, group="parse", wait=0)


async def test_argument_checks(queue: QueueBackend) -> None:
    with pytest.raises(TypeError, match="wrap a single payload in a list"):
        await queue.publish(T, "https://example.com/")
    with pytest.raises(ValueError, match="max_messages"):
        await queue.consume(T, group="g", max_messages=0)
    with pytest.raises(ValueError, match="topic"):
        await queue.publish("", ["x"])
    with pytest.raises(ValueError, match="priority must be a 64-bit int"):
        await queue.publish(T, ["x"], priority=2**63)
    assert await queue.pending(T) == 0


@pytest.mark.parametrize("option", [{"visibility_timeout": 0}, {"max_attempts": 0}])
def test_constructor_checks(open_backend: OpenBackend, option: dict[str, float]) -> None:
    with pytest.raises(ValueError, match=next(iter(option))):
        open_backend(**option)


async def test_memory_queue_hands_out_the_published_object() -> None:
    payload = object()
    async with MemoryQueue() as queue:
        await queue.publish(T, [payload])
        [d] = await take(queue)
        assert d.payload is payload
