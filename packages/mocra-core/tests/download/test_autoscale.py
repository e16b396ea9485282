"""`AutoscaledConcurrency` and `LoadSampler`: the gate, the decisions, and both directions on real load."""

from __future__ import annotations

import dataclasses
import time

import anyio
import anyio.lowlevel
import httpx
import pytest

from mocra_core.download._autoscale import AutoscaledConcurrency, AutoscaleSettings
from mocra_core.download._load_sampler import LoadSample, LoadSampler, memory_limit, resident_bytes
from mocra_core.testing import LocalServer, ServerRequest, ServerResponse

pytestmark = pytest.mark.anyio

FAST = AutoscaleSettings(min_concurrency=2, start_concurrency=4, sample_interval=0.02, scale_interval=0.1)


def calm(n: int = 5) -> list[LoadSample]:
    return [LoadSample(at=float(i), cpu=0.3, machine_cpu=0.3, memory=0.1, loop_lag=0.002) for i in range(n)]


def busy_for(seconds: float) -> None:
    """Hold the CPU (and the event loop) for `seconds`."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


# ---------------------------------------------------------------------------------------------- decisions


def test_grows_with_headroom_when_its_slots_are_used() -> None:
    auto = AutoscaledConcurrency(FAST, max_concurrency=32)
    desired, reason = auto.decide(calm(), used=4.0)
    assert (desired, reason.split(":")[0]) == (5, "grew")


def test_holds_when_its_slots_are_not_used() -> None:
    auto = AutoscaledConcurrency(FAST, max_concurrency=32)
    desired, reason = auto.decide(calm(), used=1.0)
    assert (desired, reason) == (4, "held: not saturated (1.0 of 4 slots in use)")


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"cpu": 0.99}, "cpu over 0.95"),
        ({"memory": 0.95}, "memory over 90%"),
        ({"loop_lag": 0.2}, "loop lag over 0.050s"),
    ],
)
def test_shrinks_when_one_resource_is_overloaded(change: dict[str, float], named: str) -> None:
    auto = AutoscaledConcurrency(FAST, max_concurrency=32)
    auto.desired = 20
    window = [dataclasses.replace(s, **change) for s in calm()]
    desired, reason = auto.decide(window, used=20.0)
    assert desired == 16
    assert reason.startswith("shrank: ") and named in reason


def test_a_short_spike_is_not_an_overload() -> None:
    auto = AutoscaledConcurrency(FAST, max_concurrency=32)
    window = calm(10)
    window[3] = LoadSample(at=3.0, cpu=1.0, machine_cpu=1.0, memory=0.1, loop_lag=0.3)  # 10 % of samples
    assert auto.decide(window, used=4.0)[0] == 5


def test_stays_within_its_bounds() -> None:
    auto = AutoscaledConcurrency(FAST, max_concurrency=5)
    auto.desired = 5
    assert auto.decide(calm(), used=5.0) == (5, "held at the maximum")
    auto.desired = 2
    hot = [LoadSample(at=float(i), cpu=1.0, machine_cpu=None, memory=0.0, loop_lag=0.0) for i in range(5)]
    desired, reason = auto.decide(hot, used=2.0)
    assert desired == 2 and reason.startswith("held at the minimum: cpu over")


def test_start_defaults_to_a_quarter_of_the_maximum() -> None:
    assert AutoscaledConcurrency(AutoscaleSettings(), max_concurrency=64).desired == 16
    assert AutoscaledConcurrency(AutoscaleSettings(min_concurrency=8), max_concurrency=8).desired == 8
    with pytest.raises(ValueError, match="max_concurrency: must be at least min_concurrency"):
        AutoscaledConcurrency(AutoscaleSettings(min_concurrency=8), max_concurrency=4)


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="scale_interval: must be at least sample_interval"):
        AutoscaleSettings(sample_interval=1.0, scale_interval=0.5)
    with pytest.raises(ValueError, match="max_cpu: must be > 0"):
        AutoscaleSettings(max_cpu=0)


# ---------------------------------------------------------------------------------------------- the gate


async def test_the_gate_hands_out_desired_slots_and_follows_a_resize() -> None:
    auto = AutoscaledConcurrency(FAST, max_concurrency=32)
    assert [auto.try_acquire() for _ in range(5)] == [True, True, True, True, False]
    got: list[int] = []

    async def waiter(i: int) -> None:
        await auto.acquire()
        got.append(i)

    async with anyio.create_task_group() as tg:
        tg.start_soon(waiter, 1)
        tg.start_soon(waiter, 2)
        await anyio.wait_all_tasks_blocked()
        auto.desired = 3  # shrinking takes no slot away
        auto.release()
        await anyio.wait_all_tasks_blocked()
        assert (got, auto.running, auto.state().waiting) == ([], 3, 2)
        auto._window = calm()
        auto._used = [3, 3, 3]
        auto.rescale()  # grows to 4: the first waiter gets the slot
        await anyio.wait_all_tasks_blocked()
        assert (got, auto.desired, auto.running) == ([1], 4, 4)
        auto.release()
    assert (got, auto.running) == ([1, 2], 4)
    assert auto.state().scaled == 1 and auto.state().reason.startswith("grew")


async def test_a_cancelled_waiter_passes_its_slot_on() -> None:
    auto = AutoscaledConcurrency(FAST, max_concurrency=32)
    auto.desired = 1
    async with auto.slot():
        with anyio.move_on_after(0.01):
            await auto.acquire()
        assert auto.state().waiting == 0
    assert auto.running == 0


# ---------------------------------------------------------------------------------------------- sampling


async def test_the_sampler_sees_a_cpu_bound_event_loop() -> None:
    sampler = LoadSampler(interval=0.01)
    async with anyio.create_task_group() as tg:
        await tg.start(sampler.run)
        await anyio.sleep(0.05)
        quiet = list(sampler.samples)
        for _ in range(5):
            busy_for(0.05)
            await anyio.lowlevel.checkpoint()
        await anyio.sleep(0.02)
        tg.cancel_scope.cancel()
    loaded = [s for s in sampler.samples if s not in quiet]
    assert max(s.loop_lag for s in loaded) > 0.03
    assert max(s.cpu for s in loaded) > 0.5
    assert 0 < sampler.samples[-1].memory < 1


def test_memory_is_measured_against_a_limit() -> None:
    assert resident_bytes() > 1 << 20
    assert memory_limit() > resident_bytes()


# ---------------------------------------------------------------------------------------------- real load


async def slow_page(request: ServerRequest) -> ServerResponse:
    await anyio.sleep(0.02)  # a site with some latency: a request in flight costs little CPU
    return ServerResponse(body="<p>ok</p>")


async def test_grows_under_a_local_site_workload() -> None:
    server = LocalServer(fallback=slow_page)
    auto = AutoscaledConcurrency(FAST, max_concurrency=32)
    async with server.running() as base, httpx.AsyncClient() as client, anyio.create_task_group() as tg:
        await tg.start(auto.run)

        async def fetch(i: int) -> None:
            async with auto.slot():
                response = await client.get(f"{base}/p{i}")
                assert response.status_code == 200

        async with anyio.create_task_group() as requests:
            for i in range(600):
                requests.start_soon(fetch, i)
        state = auto.state()
        tg.cancel_scope.cancel()
    assert state.desired > 6, state
    assert state.scaled >= 2


async def test_shrinks_when_the_process_is_cpu_bound() -> None:
    auto = AutoscaledConcurrency(FAST, max_concurrency=32)
    auto.desired = 20
    async with anyio.create_task_group() as tg:
        await tg.start(auto.run)
        for _ in range(30):  # ~0.9 s of a CPU-bound event loop, yielding every 30 ms
            busy_for(0.03)
            await anyio.lowlevel.checkpoint()
        state = auto.state()
        tg.cancel_scope.cancel()
    assert state.desired < 20, state
    assert "cpu over" in state.reason or "loop lag over" in state.reason
