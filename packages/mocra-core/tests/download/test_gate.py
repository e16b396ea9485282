"""`DomainGate` on Redis and LMDB: two instances stand for two workers of one job."""

from __future__ import annotations

import math
import os
import sys
import time
import uuid
from typing import TYPE_CHECKING

import anyio
import pytest

import mocra_core.download
from mocra_core._errors import BackendError, BackendUnavailable, MissingExtra
from mocra_core.coordination import CoordinationError
from mocra_core.download import DomainGate, LmdbDomainGate, RedisDomainGate, Ticket

if TYPE_CHECKING:
    import pathlib
    from collections.abc import AsyncIterator, Callable, Iterator

pytestmark = pytest.mark.anyio

REDIS_URL = os.environ.get("MOCRA_TEST_REDIS_URL", "redis://127.0.0.1:6379") + "/15"


@pytest.fixture
def redis_namespace() -> Iterator[str]:
    """A fresh namespace in Redis db 15; its keys are deleted after the test."""
    namespace = f"mocra-test-gate-{uuid.uuid4().hex}"
    yield namespace
    import redis

    with redis.Redis.from_url(REDIS_URL) as client:
        if keys := list(client.scan_iter(match=f"{namespace}:*", count=1000)):
            client.delete(*keys)


@pytest.fixture(params=["redis", "lmdb"])
def open_gate(
    request: pytest.FixtureRequest, tmp_path: pathlib.Path, redis_namespace: str
) -> Callable[[], DomainGate]:
    """`open_gate()`: another gate of the same job (another worker), on the parametrised backend."""
    if request.param == "redis":
        return lambda: RedisDomainGate(REDIS_URL, namespace=redis_namespace)
    return lambda: LmdbDomainGate(tmp_path / "gates")


@pytest.fixture
async def workers(open_gate: Callable[[], DomainGate]) -> AsyncIterator[tuple[DomainGate, DomainGate]]:
    async with open_gate() as first, open_gate() as second:
        yield first, second


async def take(gate: DomainGate, domain: str, *, limit: int, gap: float = 0.0, ttl: float = 30.0) -> Ticket:
    """Poll until a ticket comes (every 2 ms at most), as a caller of the gate would."""
    while True:
        got = await gate.enter(domain, limit=limit, gap=gap, ttl=ttl)
        if isinstance(got, Ticket):
            return got
        assert 0 < got <= ttl
        await anyio.sleep(min(got, 0.002))


async def test_at_most_limit_holders_across_workers(workers: tuple[DomainGate, DomainGate]) -> None:
    active, most, done = 0, 0, 0

    async def request(gate: DomainGate) -> None:
        nonlocal active, most, done
        ticket = await take(gate, "example.com", limit=3)
        active += 1
        most = max(most, active)
        await anyio.sleep(0.005)
        active -= 1
        await gate.leave(ticket)
        done += 1

    async with anyio.create_task_group() as tg:
        for i in range(40):
            tg.start_soon(request, workers[i % 2])
    assert done == 40
    assert most <= 3
    other = await workers[0].enter("example.org", limit=1, gap=0.0, ttl=30.0)  # domains are separate
    assert isinstance(other, Ticket)
    await workers[0].leave(other)


async def test_a_full_domain_answers_with_the_time_until_its_first_holder_expires(
    workers: tuple[DomainGate, DomainGate],
) -> None:
    first, second = workers
    held = await first.enter("example.com", limit=2, gap=0.0, ttl=10.0)
    assert isinstance(held, Ticket) and held.wait == 0
    other = await second.enter("example.com", limit=2, gap=0.0, ttl=20.0)
    assert isinstance(other, Ticket)
    full = await second.enter("example.com", limit=2, gap=0.0, ttl=30.0)
    assert isinstance(full, float) and 9 < full <= 10
    assert isinstance(await second.enter("example.com", limit=3, gap=0.0, ttl=30.0), Ticket)  # its own limit
    await first.leave(held)
    await first.leave(held)  # leaving twice frees one slot only
    assert isinstance(await first.enter("example.com", limit=3, gap=0.0, ttl=30.0), Ticket)
    assert isinstance(await first.enter("example.com", limit=3, gap=0.0, ttl=30.0), float)
    await second.leave(other)
    assert isinstance(await first.enter("example.com", limit=3, gap=0.0, ttl=30.0), Ticket)


async def test_starts_are_spaced_by_the_gap_across_workers(workers: tuple[DomainGate, DomainGate]) -> None:
    gap = 0.1
    starts: list[float] = []

    async def request(gate: DomainGate) -> None:
        ticket = await take(gate, "example.com", limit=100, gap=gap)
        await anyio.sleep(ticket.wait)
        starts.append(time.monotonic())
        await gate.leave(ticket)

    async with anyio.create_task_group() as tg:
        for i in range(6):
            tg.start_soon(request, workers[i % 2])
    starts.sort()
    spacing = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    assert min(spacing) >= gap - 0.03, spacing  # sleeps end late, never early; the tolerance is for the RTT
    assert starts[-1] - starts[0] >= 5 * gap - 0.03


async def test_reserved_waits_grow_by_the_gap(workers: tuple[DomainGate, DomainGate]) -> None:
    tickets = []
    for i in range(4):
        got = await workers[i % 2].enter("example.com", limit=10, gap=5.0, ttl=30.0)
        assert isinstance(got, Ticket)
        tickets.append(got)
    waits = [t.wait for t in tickets]
    assert waits[0] == 0
    for n, wait in enumerate(waits[1:], 1):
        assert 5 * n - 0.5 < wait <= 5 * n, waits
    assert len({t.holder for t in tickets}) == 4


async def test_the_slot_of_a_holder_that_never_leaves_comes_back_after_its_ttl(
    workers: tuple[DomainGate, DomainGate],
) -> None:
    killed, alive = workers
    assert isinstance(await killed.enter("example.com", limit=1, gap=0.0, ttl=0.2), Ticket)  # never left
    full = await alive.enter("example.com", limit=1, gap=0.0, ttl=30.0)
    assert isinstance(full, float) and full <= 0.2
    await anyio.sleep(full + 0.02)
    assert isinstance(await alive.enter("example.com", limit=1, gap=0.0, ttl=30.0), Ticket)


async def test_a_renewed_ticket_outlives_its_first_ttl(workers: tuple[DomainGate, DomainGate]) -> None:
    holder, other = workers
    ticket = await holder.enter("example.com", limit=1, gap=0.0, ttl=0.3)
    assert isinstance(ticket, Ticket)
    for _ in range(3):
        await anyio.sleep(0.15)
        assert await holder.renew(ticket, ttl=0.3)
    full = await other.enter("example.com", limit=1, gap=0.0, ttl=30.0)  # 0.45 s in: still held
    assert isinstance(full, float) and 0.1 < full <= 0.3
    await holder.leave(ticket)
    assert not await holder.renew(ticket, ttl=0.3)  # left: not taken again
    late = await other.enter("example.com", limit=1, gap=0.0, ttl=0.1)
    assert isinstance(late, Ticket)
    await anyio.sleep(0.15)
    assert not await other.renew(late, ttl=30.0)  # expired: not taken again
    assert isinstance(await holder.enter("example.com", limit=1, gap=0.0, ttl=30.0), Ticket)


@pytest.mark.parametrize(
    ("domain", "limit", "gap", "ttl", "message"),
    [
        ("", 1, 0.0, 1.0, "domain: must be a non-empty host name"),
        ("a" * 256, 1, 0.0, 1.0, "domain: must be at most 255 bytes"),
        ("example.com", 0, 0.0, 1.0, "limit: must be an int >= 1, got 0"),
        ("example.com", True, 0.0, 1.0, "limit: must be an int >= 1, got True"),
        ("example.com", 1, -1.0, 1.0, "gap: must be a finite number of seconds >= 0, got -1.0"),
        ("example.com", 1, math.nan, 1.0, "gap: must be a finite number of seconds >= 0, got nan"),
        ("example.com", 1, 0.0, 0.0, r"ttl: must be a finite number of seconds > 0, got 0.0"),
        ("example.com", 1, 0.0, math.inf, r"ttl: must be a finite number of seconds > 0, got inf"),
    ],
)
async def test_bad_arguments_are_named(
    workers: tuple[DomainGate, DomainGate], domain: str, limit: int, gap: float, ttl: float, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        await workers[0].enter(domain, limit=limit, gap=gap, ttl=ttl)


async def test_a_closed_gate_says_so(open_gate: Callable[[], DomainGate]) -> None:
    gate = open_gate()
    async with gate:
        ticket = await gate.enter("example.com", limit=1, gap=0.0, ttl=1.0)
        assert isinstance(ticket, Ticket)
    await gate.aclose()  # twice is harmless
    with pytest.raises((BackendError, CoordinationError), match="closed"):
        await gate.enter("example.com", limit=1, gap=0.0, ttl=1.0)
    with pytest.raises((BackendError, CoordinationError), match="closed"):
        await gate.leave(ticket)
    with pytest.raises((BackendError, CoordinationError), match="closed"):
        await gate.renew(ticket, ttl=1.0)


async def test_redis_keys_live_only_while_they_matter(redis_namespace: str) -> None:
    import redis.asyncio

    async with RedisDomainGate(REDIS_URL, namespace=redis_namespace) as gate:
        ticket = await gate.enter("example.com", limit=1, gap=2.0, ttl=30.0)
        assert isinstance(ticket, Ticket)
        async with redis.asyncio.Redis.from_url(REDIS_URL) as raw:
            holders, nxt = f"{redis_namespace}:gate:example.com", f"{redis_namespace}:gate-next:example.com"
            assert 30_000 < await raw.pttl(holders) <= 31_000
            assert 2_000 < await raw.pttl(nxt) <= 3_000
            await gate.leave(ticket)
            assert not await raw.exists(holders)


async def test_an_unreachable_redis_fails_at_start_naming_the_redacted_url() -> None:
    with pytest.raises(BackendUnavailable, match=r"redis://:\*\*\*@127\.0\.0\.1:1/0") as caught:
        async with RedisDomainGate("redis://:s3cret@127.0.0.1:1/0"):
            pass
    assert "s3cret" not in str(caught.value)
    assert "s3cret" not in repr(RedisDomainGate("redis://:s3cret@127.0.0.1:1/0"))


async def test_lmdb_drops_the_next_start_of_an_idle_domain(tmp_path: pathlib.Path) -> None:
    now = [1_000.0]
    async with LmdbDomainGate(tmp_path, clock=lambda: now[0]) as gate:
        ticket = await gate.enter("example.com", limit=1, gap=1.0, ttl=30.0)
        assert isinstance(ticket, Ticket)
        now[0] += 2
        await gate.leave(ticket)
        again = await gate.enter("example.com", limit=1, gap=1.0, ttl=30.0)
        assert isinstance(again, Ticket) and again.wait == 0
        now[0] += 0.5
        await gate.leave(again)  # the next start (1003) is still ahead: kept
        third = await gate.enter("example.com", limit=1, gap=1.0, ttl=30.0)
        assert isinstance(third, Ticket) and third.wait == pytest.approx(0.5)


def test_without_the_extra_the_name_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [name for name in sys.modules if name.partition(".")[0] == "redis"]:
        monkeypatch.setitem(sys.modules, name, None)  # type: ignore[arg-type]  # as if not installed
    monkeypatch.delitem(sys.modules, "mocra_core.backends.redis._gate", raising=False)
    monkeypatch.delitem(sys.modules, "mocra_core.backends.redis._connection", raising=False)
    monkeypatch.delattr(mocra_core.download, "RedisDomainGate", raising=False)
    with pytest.raises(MissingExtra, match=r"RedisDomainGate needs: pip install 'mocra\[redis\]'"):
        mocra_core.download.RedisDomainGate  # noqa: B018
