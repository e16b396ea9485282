"""DomainLimiter: concurrency seen by a real server, delays and adaptive slow-down on a fake clock."""

from __future__ import annotations

from email.utils import formatdate
from typing import TYPE_CHECKING

import anyio
import pytest

from mocra_core.download import DomainLimiter, HttpxDownloader, domain_of
from mocra_core.download._limiter import BACKOFF_FLOOR, MAX_BACKOFF
from mocra_core.http import Request
from mocra_core.testing import LocalServer, ServerRequest, ServerResponse

if TYPE_CHECKING:
    from conftest import FakeClock, MakeDownloader

pytestmark = pytest.mark.anyio


def fake_limiter(clock: FakeClock, **kwargs: float) -> DomainLimiter:
    return DomainLimiter(clock=clock, sleep=clock.sleep, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("given", "domain"),
    [
        ("https://Example.COM/a", "example.com"),
        ("http://user:pw@example.com:8080/x", "example.com"),
        ("example.com", "example.com"),
        ("Example.com:8080", "example.com"),
        ("http://[::1]:8000/", "::1"),
    ],
)
def test_domain_is_the_lower_cased_host_without_port(given: str, domain: str) -> None:
    assert domain_of(given) == domain


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"concurrency": 0}, "concurrency"),
        ({"delay": -1.0}, "delay"),
        ({"jitter": 2.0}, "jitter"),
        ({"max_backoff": -1.0}, "max_backoff"),
        ({"max_backoff": float("inf")}, "max_backoff"),
        ({"max_backoff": float("nan")}, "max_backoff"),
    ],
)
def test_nonsense_is_rejected(kwargs: dict[str, float], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        DomainLimiter(**kwargs)  # type: ignore[arg-type]


async def test_per_domain_concurrency_observed_at_the_server() -> None:
    current = peak = 0

    async def slow(req: ServerRequest) -> ServerResponse:
        nonlocal current, peak
        current += 1
        peak = max(peak, current)
        await anyio.sleep(0.03)
        current -= 1
        return ServerResponse(body="ok")

    server = LocalServer(fallback=slow)
    limiter = DomainLimiter(concurrency=3)
    async with server.running() as base, HttpxDownloader() as downloader:

        async def fetch(i: int) -> None:
            async with limiter.slot(base + f"/{i}"):
                await downloader.download(Request(base + f"/{i}"))

        async with anyio.create_task_group() as tg:
            for i in range(15):
                tg.start_soon(fetch, i)
    assert sum(server.hits.values()) == 15
    assert peak == 3
    assert limiter.state("127.0.0.1").active == 0


async def test_domains_are_limited_independently() -> None:
    limiter = DomainLimiter(concurrency=1)
    async with limiter.slot("https://a.example/1"), limiter.slot("https://b.example/1"):
        assert limiter.state("a.example").active == 1
        assert limiter.state("b.example").active == 1


async def test_waiters_are_served_in_arrival_order() -> None:
    limiter = DomainLimiter(concurrency=1)
    order: list[int] = []
    release = anyio.Event()

    async def holder() -> None:
        async with limiter.slot("example.com"):
            await release.wait()

    async def waiter(i: int) -> None:
        async with limiter.slot("example.com"):
            order.append(i)

    async with anyio.create_task_group() as tg:
        tg.start_soon(holder)
        await anyio.wait_all_tasks_blocked()
        for i in range(5):
            tg.start_soon(waiter, i)
            await anyio.wait_all_tasks_blocked()
        assert limiter.state("example.com").waiting == 5
        release.set()
    assert order == [0, 1, 2, 3, 4]


async def test_a_cancelled_waiter_gives_up_its_place() -> None:
    limiter = DomainLimiter(concurrency=1)
    got: list[str] = []
    async with anyio.create_task_group() as tg:
        async with limiter.slot("example.com"):

            async def impatient() -> None:
                with anyio.move_on_after(0.01):
                    async with limiter.slot("example.com"):
                        got.append("impatient")

            async def patient() -> None:
                async with limiter.slot("example.com"):
                    got.append("patient")

            tg.start_soon(impatient)
            tg.start_soon(patient)
            await anyio.sleep(0.05)  # the impatient one has given up by now
            assert limiter.state("example.com").waiting == 1
    assert got == ["patient"]
    state = limiter.state("example.com")
    assert (state.active, state.waiting) == (0, 0)


async def test_minimum_delay_between_starts(clock: FakeClock) -> None:
    limiter = fake_limiter(clock, delay=2.0)
    starts = []
    for _ in range(3):
        async with limiter.slot("example.com"):
            starts.append(clock.now)
    async with limiter.slot("other.example"):  # another domain does not wait
        starts.append(clock.now)
    assert starts == [0.0, 2.0, 4.0, 4.0]


async def test_delay_jitter(clock: FakeClock) -> None:
    limiter = DomainLimiter(delay=2.0, jitter=0.5, clock=clock, sleep=clock.sleep, random=lambda: 1.0)
    starts = []
    for _ in range(2):
        async with limiter.slot("example.com"):
            starts.append(clock.now)
    assert starts == [0.0, 3.0]  # 2.0 * (1 + 0.5)


async def test_429_slows_the_domain_down_then_successes_restore_it(clock: FakeClock) -> None:
    limiter = fake_limiter(clock, concurrency=8)
    for _ in range(3):
        limiter.feedback("example.com", 429)
    state = limiter.state("example.com")
    assert (state.concurrency, state.extra_delay) == (1, 4 * BACKOFF_FLOOR)
    assert limiter.state("other.example").concurrency == 8  # only that domain

    starts = []
    for _ in range(3):
        async with limiter.slot("https://example.com/"):
            starts.append(clock.now)
    assert starts == [0.0, 1.0, 2.0]  # the extra delay spaces the starts

    extras, limits = [], []
    for _ in range(40):
        limiter.feedback("example.com", 200)
        state = limiter.state("example.com")
        extras.append(state.extra_delay)
        limits.append(state.concurrency)
    assert extras == [0.0] * 40  # the domain serves again: its extra delay ends at the first success
    assert limits[0] == 2 and limits[2] == 3  # additive: +1 after `concurrency` successes in a row
    assert limits == sorted(limits) and limits[-1] == 8  # back to the configured concurrency, no further


async def test_backoff_is_capped(clock: FakeClock) -> None:
    limiter = fake_limiter(clock)
    for _ in range(20):
        limiter.feedback("example.com", 503)
    state = limiter.state("example.com")
    assert (state.extra_delay, state.concurrency) == (MAX_BACKOFF, 1)


async def test_max_backoff_bounds_the_slow_down_and_a_success_ends_it(clock: FakeClock) -> None:
    limiter = fake_limiter(clock, max_backoff=2.0)
    for _ in range(20):
        limiter.feedback("example.com", 429, "300")
    state = limiter.state("example.com")
    assert (state.extra_delay, state.blocked_for) == (2.0, 2.0)  # neither the gap nor the block passes 2 s
    starts = []
    for _ in range(3):
        async with limiter.slot("example.com"):
            starts.append(clock.now)
    assert starts == [2.0, 4.0, 6.0]  # one request per `max_backoff` at worst, never slower
    limiter.feedback("example.com", 200)
    assert limiter.state("example.com").extra_delay == 0.0
    async with limiter.slot("example.com"):
        assert clock.now == 6.0  # back to normal: no extra gap after the success


async def test_max_backoff_zero_never_slows_a_domain_for_its_responses(clock: FakeClock) -> None:
    limiter = fake_limiter(clock, max_backoff=0.0)
    limiter.feedback("example.com", 503, "60")
    state = limiter.state("example.com")
    assert (state.extra_delay, state.blocked_for, state.concurrency) == (0.0, 0.0, 4)


async def test_other_statuses_change_nothing(clock: FakeClock) -> None:
    limiter = fake_limiter(clock)
    limiter.feedback("example.com", 429)
    for status in (404, 500, 403):
        limiter.feedback("example.com", status)
    state = limiter.state("example.com")
    assert (state.extra_delay, state.concurrency) == (BACKOFF_FLOOR, 4)


async def test_restored_concurrency_wakes_waiters(clock: FakeClock) -> None:
    limiter = fake_limiter(clock, concurrency=2)
    limiter.feedback("example.com", 429)
    assert limiter.state("example.com").concurrency == 1
    entered = 0
    hold = anyio.Event()

    async def user() -> None:
        nonlocal entered
        async with limiter.slot("example.com"):
            entered += 1
            await hold.wait()

    async with anyio.create_task_group() as tg:
        tg.start_soon(user)
        tg.start_soon(user)
        await anyio.wait_all_tasks_blocked()
        assert (entered, limiter.state("example.com").waiting) == (1, 1)
        limiter.feedback("example.com", 200)  # one success at concurrency 1: back to 2
        await anyio.wait_all_tasks_blocked()
        assert entered == 2
        hold.set()


async def test_503_with_retry_after_from_the_server_blocks_the_domain(
    clock: FakeClock, make_downloader: MakeDownloader
) -> None:
    server = LocalServer({"/busy": ServerResponse(503, body="busy", headers={"Retry-After": "30"})})
    limiter = fake_limiter(clock)
    downloader = make_downloader()
    async with server.running() as base:
        async with limiter.slot(base):
            response = await downloader.download(Request(base + "/busy"))
        limiter.feedback(base, response.status, response.headers.get("retry-after"))
    assert limiter.state("127.0.0.1").blocked_for == 30.0
    async with limiter.slot("127.0.0.1"):
        assert clock.now == 30.0  # the next start waited for Retry-After
    assert limiter.state("127.0.0.1").blocked_for == 0.0


async def test_retry_after_http_date_and_cap(clock: FakeClock) -> None:
    limiter = fake_limiter(clock, max_backoff=300.0)
    import time

    limiter.feedback("a.example", 429, formatdate(time.time() + 120, usegmt=True))
    assert 100 < limiter.state("a.example").blocked_for <= 120
    limiter.feedback("b.example", 429, "86400")
    assert limiter.state("b.example").blocked_for == 300.0
    limiter.feedback("c.example", 429, "garbage")
    assert limiter.state("c.example").blocked_for == 0.0


async def test_configure_one_domain(clock: FakeClock) -> None:
    limiter = fake_limiter(clock, concurrency=8)
    limiter.configure("https://slow.example/robots.txt", concurrency=2, delay=5.0)
    state = limiter.state("slow.example")
    assert (state.concurrency, state.delay) == (2, 5.0)
    starts = []
    for _ in range(2):
        async with limiter.slot("slow.example"):
            starts.append(clock.now)
    assert starts == [0.0, 5.0]
    assert limiter.state("slow.example").concurrency == 2  # kept after the domain went idle


async def test_idle_domains_are_forgotten() -> None:
    limiter = DomainLimiter()
    for i in range(100):
        async with limiter.slot(f"d{i}.example"):
            pass
    assert "domains=0" in repr(limiter)
