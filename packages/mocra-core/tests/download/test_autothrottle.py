"""`AutoThrottle`: its rule on synthetic latencies, the shared store, a real host with a fixed latency."""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING

import anyio
import pytest

from mocra_core.coordination import LocalCoordination, RedisCoordination
from mocra_core.download import DomainLimiter, HttpxDownloader
from mocra_core.download._autothrottle import (
    AutoThrottle,
    AutoThrottleSettings,
    LocalPaceStore,
    SharedPaceStore,
    next_delay,
)
from mocra_core.http import Request
from mocra_core.testing import LocalServer, ServerRequest, ServerResponse

if TYPE_CHECKING:
    from mocra_core.coordination import Coordination

pytestmark = pytest.mark.anyio

REDIS_URL = "redis://127.0.0.1:6379/0"

HOST = "example.com"


def throttle(**settings: float) -> AutoThrottle:
    return AutoThrottle(AutoThrottleSettings(**settings))  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------- the rule


def test_converges_on_latency_over_target() -> None:
    t = throttle(target_concurrency=2.0, start_delay=3.0)
    delays = [t.observe(HOST, 0.05, 200) for _ in range(20)]
    assert delays == sorted(delays, reverse=True)  # down, step by step
    assert delays[-1] == pytest.approx(0.025, rel=0.01)
    assert t.pace(HOST).responses == 20


def test_a_slower_host_is_slowed_at_once() -> None:
    t = throttle(target_concurrency=1.0, start_delay=0.1)
    assert t.observe(HOST, 2.0, 200) == 2.0


def test_never_faster_than_the_minimum_or_the_hosts_floor() -> None:
    t = AutoThrottle(AutoThrottleSettings(start_delay=0.0), min_delay=0.3)
    assert t.delay(HOST) == 0.3
    assert t.observe(HOST, 0.001, 200) == 0.3
    t.floor(HOST, 1.5)  # robots.txt Crawl-delay
    assert (t.delay(HOST), t.observe(HOST, 0.001, 200)) == (1.5, 1.5)
    assert t.delay("other.example") == 0.3


def test_never_slower_than_max_delay() -> None:
    t = throttle(target_concurrency=1.0, max_delay=5.0)
    assert t.observe(HOST, 30.0, 200) == 5.0


@pytest.mark.parametrize("status", [None, 301, 404, 429, 500, 503])
def test_errors_and_non_2xx_never_shorten_the_delay(status: int | None) -> None:
    t = throttle(target_concurrency=1.0, start_delay=1.0)
    assert t.observe(HOST, 0.01, status) == 1.0
    assert t.observe(HOST, 4.0, status) == 4.0  # but a slow error lengthens it


def test_next_delay_halves_the_way_down() -> None:
    step = {"target_concurrency": 1.0, "floor": 0.0, "max_delay": 60.0}
    assert next_delay(1.0, 0.5, ok=True, **step) == 0.75


def test_on_change_reports_each_new_delay() -> None:
    t = throttle(target_concurrency=1.0, start_delay=1.0)
    seen: list[tuple[str, float]] = []
    t.on_change = lambda host, delay: seen.append((host, delay))
    t.observe(HOST, 0.2, 200)
    t.observe(HOST, 0.01, 500)  # unchanged: not reported
    assert seen == [(HOST, 0.6)]


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="target_concurrency: must be > 0"):
        AutoThrottleSettings(target_concurrency=0)
    with pytest.raises(ValueError, match="min_delay"):
        AutoThrottle(AutoThrottleSettings(), min_delay=-1)


# ---------------------------------------------------------------------------------------------- sharing


@pytest.mark.parametrize("where", ["process", "coordination", "redis"])
async def test_processes_meet_in_the_store(where: str) -> None:
    coordination: Coordination = (
        RedisCoordination(REDIS_URL, namespace=f"mocra-test-{uuid.uuid4().hex}")
        if where == "redis"
        else LocalCoordination()
    )
    async with coordination:
        store = LocalPaceStore() if where == "process" else SharedPaceStore(coordination)
        a = AutoThrottle(AutoThrottleSettings(target_concurrency=1.0, start_delay=0.1), store=store)
        b = AutoThrottle(AutoThrottleSettings(target_concurrency=1.0, start_delay=0.1), store=store)
        a.observe(HOST, 2.0, 200)  # a saw the host slow down
        b.observe(HOST, 0.1, 200)
        await a.sync()
        await b.sync()  # b's shorter delay meets a's halfway
        assert b.delay(HOST) == pytest.approx(1.05)
        for _ in range(30):  # both now see the same latency: they agree on the same delay
            a.observe(HOST, 0.1, 200)
            b.observe(HOST, 0.1, 200)
            await a.sync()
            await b.sync()
        assert a.delay(HOST) == pytest.approx(0.1, rel=0.01)
        assert b.delay(HOST) == pytest.approx(0.1, rel=0.01)


class DownStore:
    async def merge(self, host: str, delay: float) -> float:
        raise ConnectionError("store down")


async def test_a_store_out_of_reach_keeps_the_own_delay_and_tries_again() -> None:
    t = AutoThrottle(AutoThrottleSettings(target_concurrency=1.0), store=DownStore())
    t.observe(HOST, 0.5, 200)
    await t.sync()
    assert t.delay(HOST) == 0.75
    t.store = LocalPaceStore()
    await t.sync()  # retried
    assert t.store.delays == {HOST: 0.75}


# ---------------------------------------------------------------------------------------------- a real host


async def test_converges_on_a_host_with_a_fixed_latency() -> None:
    in_flight = late_peak = served = 0

    async def handler(request: ServerRequest) -> ServerResponse:
        nonlocal in_flight, late_peak, served
        in_flight += 1
        served += 1
        if served > 30:  # past the start: the delay has settled
            late_peak = max(late_peak, in_flight)
        await anyio.sleep(0.05)
        in_flight -= 1
        return ServerResponse(body="ok")

    server = LocalServer(fallback=handler)
    limiter = DomainLimiter(concurrency=8)
    t = AutoThrottle(AutoThrottleSettings(target_concurrency=2.0, start_delay=0.2))
    t.on_change = lambda host, delay: limiter.configure(host, delay=delay)
    limiter.configure("127.0.0.1", delay=t.delay("127.0.0.1"))  # a host's start delay, at first sight
    downloader = HttpxDownloader()
    async with server.running() as base:

        async def worker(n: int) -> None:
            for i in range(12):
                async with limiter.slot(base):
                    start = time.perf_counter()
                    response = await downloader.download(Request(f"{base}/{n}/{i}"))
                    t.observe("127.0.0.1", time.perf_counter() - start, response.status)

        async with anyio.create_task_group() as tg:
            for n in range(6):
                tg.start_soon(worker, n)
    await downloader.aclose()
    latency = t.pace("127.0.0.1").latency
    assert 0.05 <= latency < 0.2
    assert t.delay("127.0.0.1") == pytest.approx(latency / 2, rel=0.2)
    assert limiter.state("127.0.0.1").delay == t.delay("127.0.0.1")
    assert late_peak <= 3  # about latency / delay = 2 requests in flight, not the 6 workers
