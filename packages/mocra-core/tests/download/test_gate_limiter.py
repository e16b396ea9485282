"""`GatedLimiter`: two per-process limiters (two workers) behind one job-wide gate; the engine's choice."""

from __future__ import annotations

import math
import os
import time
import uuid
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import anyio
import pytest

from mocra_core.config import Settings
from mocra_core.download import DomainLimiter, GatedLimiter, LmdbDomainGate, RedisDomainGate, Ticket
from mocra_core.engine import BackendPlan

if TYPE_CHECKING:
    import pathlib
    from collections.abc import AsyncIterator, Iterator

    from mocra_core.download import DomainGate

pytestmark = pytest.mark.anyio

REDIS_URL = os.environ.get("MOCRA_TEST_REDIS_URL", "redis://127.0.0.1:6379") + "/15"


@pytest.fixture(params=["redis", "lmdb"])
def gate_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def redis_namespace() -> Iterator[str]:
    namespace = f"mocra-test-gate-{uuid.uuid4().hex}"
    yield namespace
    import redis

    with redis.Redis.from_url(REDIS_URL) as client:
        if keys := list(client.scan_iter(match=f"{namespace}:*", count=1000)):
            client.delete(*keys)


@pytest.fixture
async def gates(
    gate_kind: str, tmp_path: pathlib.Path, redis_namespace: str
) -> AsyncIterator[tuple[DomainGate, DomainGate]]:
    """The gates of two workers of one job."""
    if gate_kind == "redis":
        async with (
            RedisDomainGate(REDIS_URL, namespace=redis_namespace) as first,
            RedisDomainGate(REDIS_URL, namespace=redis_namespace) as second,
        ):
            yield first, second
    else:
        async with LmdbDomainGate(tmp_path) as first, LmdbDomainGate(tmp_path) as second:
            yield first, second


@asynccontextmanager
async def two_workers(
    gates: tuple[DomainGate, DomainGate], **limits: float
) -> AsyncIterator[list[GatedLimiter]]:
    """The limiters of two workers of one job."""
    async with (
        GatedLimiter(DomainLimiter(**limits), gates[0]) as first,  # type: ignore[arg-type]
        GatedLimiter(DomainLimiter(**limits), gates[1]) as second,  # type: ignore[arg-type]
    ):
        yield [first, second]


async def test_concurrency_holds_across_workers(gates: tuple[DomainGate, DomainGate]) -> None:
    active, most, done = 0, 0, 0

    async def request(limiter: GatedLimiter) -> None:
        nonlocal active, most, done
        async with limiter.slot("http://example.com/page"):
            active += 1
            most = max(most, active)
            await anyio.sleep(0.005)
            active -= 1
        done += 1

    async with two_workers(gates, concurrency=2) as limiters, anyio.create_task_group() as tg:
        for i in range(30):
            tg.start_soon(request, limiters[i % 2])
    assert done == 30
    assert most <= 2  # each worker alone would allow 2, so 4 together
    assert all(limiter.state("example.com").active == 0 for limiter in limiters)


async def test_delay_holds_across_workers(gates: tuple[DomainGate, DomainGate]) -> None:
    starts: list[float] = []

    async def request(limiter: GatedLimiter) -> None:
        async with limiter.slot("example.com"):
            starts.append(time.monotonic())

    async with two_workers(gates, concurrency=4, delay=0.08) as limiters, anyio.create_task_group() as tg:
        for i in range(6):
            tg.start_soon(request, limiters[i % 2])
    starts.sort()
    spacing = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    assert min(spacing) >= 0.08 - 0.03, spacing


async def test_slow_down_of_one_worker_widens_its_own_gap(gates: tuple[DomainGate, DomainGate]) -> None:
    async with two_workers(gates, concurrency=4) as (slowed, other):
        await slow_down_one(slowed, other)


async def slow_down_one(slowed: GatedLimiter, other: GatedLimiter) -> None:
    slowed.feedback("example.com", 429)  # extra delay 0.25 s, concurrency 2 — in this worker only
    assert (slowed.state("example.com").extra_delay, other.state("example.com").extra_delay) == (0.25, 0.0)
    async with slowed.slot("example.com"):
        pass
    began = time.monotonic()
    async with other.slot("example.com"):  # waits for the gap the slowed worker reserved
        waited = time.monotonic() - began
    assert waited >= 0.2


async def test_cancelling_a_waiting_slot_gives_its_ticket_back(gates: tuple[DomainGate, DomainGate]) -> None:
    async with two_workers(gates, concurrency=1, delay=5.0) as (first, second):
        async with first.slot("example.com"):
            pass
        with anyio.move_on_after(0.1):
            async with second.slot("example.com"):  # reserved a start 5 s away: cancelled while sleeping
                pytest.fail("started before its reserved time")
    got = await gates[0].enter("example.com", limit=1, gap=0.0, ttl=1.0)
    assert isinstance(got, Ticket)  # the cancelled slot's ticket was given back
    assert second.state("example.com").active == 0


async def test_a_slot_held_past_the_ttl_keeps_its_ticket(gates: tuple[DomainGate, DomainGate]) -> None:
    async with GatedLimiter(DomainLimiter(concurrency=1), gates[0], ttl=0.3) as limiter:
        async with limiter.slot("example.com"):
            await anyio.sleep(0.7)  # renewed every 0.1 s
            got = await gates[1].enter("example.com", limit=1, gap=0.0, ttl=30.0)
            assert isinstance(got, float) and got <= 0.3
        with pytest.raises(RuntimeError, match="already entered"):
            await limiter.__aenter__()
    with pytest.raises(RuntimeError, match=r"enter the GatedLimiter \(`async with`\) before taking slots"):
        limiter.slot("example.com")
    assert isinstance(await gates[1].enter("example.com", limit=1, gap=0.0, ttl=30.0), Ticket)


def test_ttl_must_be_positive(tmp_path: pathlib.Path) -> None:
    gate = LmdbDomainGate(tmp_path)
    for ttl in (0.0, math.inf):
        with pytest.raises(ValueError, match=f"ttl: must be a finite number of seconds > 0, got {ttl}"):
            GatedLimiter(DomainLimiter(), gate, ttl=ttl)
    anyio.run(gate.aclose)


@pytest.mark.parametrize(
    ("queue", "coordination", "job_dir", "expected"),
    [
        ("memory://", None, False, None),
        ("memory://", None, True, None),  # one process with a job dir: its own limiter is the job's
        ("redis://127.0.0.1:6379/15", None, False, "RedisDomainGate"),
        ("nats://127.0.0.1:4222", "redis://127.0.0.1:6379/15", False, "RedisDomainGate"),
        ("nats://127.0.0.1:4222", None, True, "LmdbDomainGate"),
        ("kafka://127.0.0.1:9092", "lmdb://DIR/coordination", False, "LmdbDomainGate"),
        ("redis://127.0.0.1:6379/15", "memory://", False, None),  # each worker keeps its own limits
    ],
)
async def test_the_engine_picks_the_gate_of_its_coordination_store(
    tmp_path: pathlib.Path, queue: str, coordination: str | None, job_dir: bool, expected: str | None
) -> None:
    crawl = {"job_dir": str(tmp_path / "job")} if job_dir else {}
    coordination_settings = {"url": coordination.replace("DIR", str(tmp_path))} if coordination else {}
    settings = Settings.from_mapping(
        {"queue": {"url": queue}, "coordination": coordination_settings, "crawl": crawl}
    )
    gate = BackendPlan.decide(settings, job="books").make_gate()
    assert (None if gate is None else type(gate).__name__) == expected
    if isinstance(gate, RedisDomainGate):
        assert gate.namespace == "mocra-books"
    if isinstance(gate, LmdbDomainGate):
        assert gate.path == str(tmp_path / ("job/gates" if job_dir else "coordination-gates"))
    if gate is not None:
        await gate.aclose()


class CountingGate:
    """A real gate that counts the `enter` and `leave` calls reaching it."""

    def __init__(self, gate: DomainGate) -> None:
        self.gate = gate
        self.enters = 0
        self.leaves = 0

    async def enter(self, domain: str, *, limit: int, gap: float, ttl: float) -> Ticket | float:
        self.enters += 1
        return await self.gate.enter(domain, limit=limit, gap=gap, ttl=ttl)

    async def leave(self, ticket: Ticket) -> None:
        self.leaves += 1
        await self.gate.leave(ticket)

    async def renew(self, ticket: Ticket, *, ttl: float) -> bool:
        return await self.gate.renew(ticket, ttl=ttl)


async def test_a_busy_worker_passes_its_ticket_to_its_next_request(
    gates: tuple[DomainGate, DomainGate],
) -> None:
    counting = CountingGate(gates[0])
    async with GatedLimiter(DomainLimiter(concurrency=1), counting, reuse_for=30) as limiter:  # type: ignore[arg-type]
        for _ in range(10):
            async with limiter.slot("example.com"):
                pass
        assert (counting.enters, counting.leaves) == (1, 0)
        # the spare ticket still counts job-wide: another worker finds the domain full ...
        assert not isinstance(await gates[1].enter("example.com", limit=1, gap=0, ttl=10), Ticket)
        await anyio.sleep(limiter.spare_idle + 0.1)
        # ... until nobody of this worker took it within spare_idle
        assert counting.leaves == 1
        ticket = await gates[1].enter("example.com", limit=1, gap=0, ttl=10)
        assert isinstance(ticket, Ticket)
        await gates[1].leave(ticket)


async def test_a_ticket_goes_back_after_its_reuse_time(gates: tuple[DomainGate, DomainGate]) -> None:
    counting = CountingGate(gates[0])
    async with GatedLimiter(DomainLimiter(concurrency=1), counting, reuse_for=0.05) as limiter:  # type: ignore[arg-type]
        async with limiter.slot("example.com"):
            await anyio.sleep(0.1)
        async with limiter.slot("example.com"):
            pass
    assert counting.enters == 2
    assert counting.leaves == 2  # the second one at exit, as a spare


async def test_a_domain_with_a_delay_reserves_every_start_at_the_gate(
    gates: tuple[DomainGate, DomainGate],
) -> None:
    counting = CountingGate(gates[0])
    limits = DomainLimiter(concurrency=1, delay=0.01)
    async with GatedLimiter(limits, counting, reuse_for=30) as limiter:  # type: ignore[arg-type]
        for _ in range(3):
            async with limiter.slot("example.com"):
                pass
    assert (counting.enters, counting.leaves) == (3, 3)


async def test_waiting_workers_get_turns_while_one_reuses(gates: tuple[DomainGate, DomainGate]) -> None:
    served = [0, 0]

    async def keep_busy(limiter: GatedLimiter, who: int) -> None:
        for _ in range(40):
            async with limiter.slot("example.com"):
                served[who] += 1
                await anyio.sleep(0.005)

    async with (
        GatedLimiter(DomainLimiter(concurrency=1), gates[0], reuse_for=0.05) as first,
        GatedLimiter(DomainLimiter(concurrency=1), gates[1], reuse_for=0.05) as second,
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(keep_busy, first, 0)
        await anyio.sleep(0.02)
        with anyio.fail_after(20):
            await keep_busy(second, 1)
    assert served == [40, 40]


def test_reuse_times_must_be_finite(tmp_path: pathlib.Path) -> None:
    gate = LmdbDomainGate(tmp_path)
    with pytest.raises(ValueError, match="reuse_for"):
        GatedLimiter(DomainLimiter(), gate, reuse_for=-1)
    with pytest.raises(ValueError, match="spare_idle"):
        GatedLimiter(DomainLimiter(), gate, spare_idle=math.inf)
