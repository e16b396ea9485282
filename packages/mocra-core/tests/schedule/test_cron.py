"""CronSchedule and CronRunner, on a fake clock (no real waiting)."""

from __future__ import annotations

import datetime
import logging
import time
from zoneinfo import ZoneInfo

import anyio
import anyio.lowlevel
import pytest

from mocra_core import ConfigError
from mocra_core.schedule import CronRunner, CronSchedule

T0 = 1_700_000_000.0  # 2023-11-14T22:13:20Z
MINUTE0 = 1_700_000_040.0  # the next whole minute after T0

# A broken runner loops forever on the fake clock; fail fast instead of at the suite's 120 s timeout.
pytestmark = pytest.mark.timeout(10)


class FakeClock:
    """Wall clock whose `sleep` moves time forward instead of waiting."""

    def __init__(self, now: float = T0) -> None:
        self.now = now
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        await anyio.lowlevel.checkpoint()


class Recorder:
    def __init__(self, clock: FakeClock, *, takes: float = 0.0) -> None:
        self.clock = clock
        self.takes = takes
        self.calls: list[tuple[float, float]] = []  # (fire_time, clock when called)

    async def __call__(self, fire_time: float) -> None:
        self.calls.append((fire_time, self.clock.now))
        self.clock.now += self.takes


def runner(schedule: CronSchedule, callback: Recorder, clock: FakeClock, **kwargs: object) -> CronRunner:
    return CronRunner(schedule, callback, clock=clock, sleep=clock.sleep, **kwargs)  # type: ignore[arg-type]


# ------------------------------------------------------------------ CronSchedule


def test_next_after_is_strictly_after() -> None:
    s = CronSchedule("* * * * *")
    assert s.next_after(T0) == MINUTE0
    assert s.next_after(MINUTE0) == MINUTE0 + 60
    assert s.next_after(MINUTE0 - 0.001) == MINUTE0


def test_six_fields_have_seconds_first() -> None:
    s = CronSchedule("*/5 * * * * *")
    assert s.next_after(T0) == T0 + 5
    assert s.next_after(T0 + 5) == T0 + 10
    # second 30 of every 2nd minute: the minute field is the second one
    s = CronSchedule("30 */2 * * * *")
    t = s.next_after(T0)
    assert datetime.datetime.fromtimestamp(t, datetime.UTC).second == 30
    assert s.next_after(t) - t == 120


def test_aliases_are_accepted() -> None:
    assert CronSchedule("@hourly").next_after(0.0) == 3600.0


@pytest.mark.parametrize(
    "expression",
    ["", "* * *", "61 * * * *", "* * * * * * *", "every minute", "0 0 30 2 *", "@reboot", "H * * * *"],
)
def test_invalid_expression_names_it(expression: str) -> None:
    with pytest.raises(ConfigError) as info:
        CronSchedule(expression)
    assert info.value.key == "cron"
    assert f"invalid cron expression {expression!r}" in str(info.value)


@pytest.mark.parametrize("tolerance", [-1.0, float("nan")])
def test_negative_tolerance_is_rejected(tolerance: float) -> None:
    with pytest.raises(ConfigError, match="misfire_tolerance"):
        CronSchedule("* * * * *", misfire_tolerance=tolerance)


def test_due_nothing_before_next_fire() -> None:
    s = CronSchedule("* * * * *")
    assert s.due(MINUTE0, MINUTE0 + 59.9) == ([], [])
    assert s.due(MINUTE0, MINUTE0) == ([], [])


def test_due_on_time_and_within_tolerance() -> None:
    s = CronSchedule("* * * * *", misfire_tolerance=10)
    assert s.due(T0, MINUTE0) == ([MINUTE0], [])
    assert s.due(T0, MINUTE0 + 10) == ([MINUTE0], [])
    assert s.due(T0, MINUTE0 + 10.5) == ([], [MINUTE0])


def test_due_coalesces_into_latest_and_reports_the_rest() -> None:
    s = CronSchedule("* * * * *", misfire_tolerance=30)
    to_run, missed = s.due(T0, MINUTE0 + 120 + 5)
    assert to_run == [MINUTE0 + 120]
    assert missed == [MINUTE0, MINUTE0 + 60]


def test_due_with_zero_tolerance_runs_only_exact_times() -> None:
    s = CronSchedule("* * * * *", misfire_tolerance=0)
    assert s.due(T0, MINUTE0) == ([MINUTE0], [])
    assert s.due(T0, MINUTE0 + 0.001) == ([], [MINUTE0])


def test_due_without_last_fire_counts_only_the_latest() -> None:
    s = CronSchedule("* * * * *", misfire_tolerance=5)
    assert s.due(None, MINUTE0 + 600 + 3) == ([MINUTE0 + 600], [])
    assert s.due(None, MINUTE0 + 600 + 6) == ([], [])


def test_due_lists_a_bounded_number_of_missed_times() -> None:
    s = CronSchedule("* * * * * *", misfire_tolerance=1)
    to_run, missed = s.due(T0, T0 + 7 * 86400)  # a week offline, one fire per second
    assert to_run == [T0 + 7 * 86400]
    assert missed == [T0 + i for i in range(1, 1001)]


def test_timezone_reads_fields_in_that_zone() -> None:
    tokyo = ZoneInfo("Asia/Tokyo")  # UTC+9, no DST
    t = CronSchedule("0 9 * * *", timezone=tokyo).next_after(T0)
    assert datetime.datetime.fromtimestamp(t, tokyo).hour == 9
    assert datetime.datetime.fromtimestamp(t, datetime.UTC).hour == 0
    assert datetime.datetime.fromtimestamp(CronSchedule("0 9 * * *").next_after(T0), datetime.UTC).hour == 9


def test_utc_default_keeps_intervals_across_a_dst_change() -> None:
    # 2024-03-10 is a spring-forward day in New York; in UTC hourly fires stay 3600 s apart.
    start = datetime.datetime(2024, 3, 10, 5, 0, tzinfo=datetime.UTC).timestamp()
    s = CronSchedule("0 * * * *")
    times = [s.next_after(start)]
    for _ in range(4):
        times.append(s.next_after(times[-1]))
    assert {b - a for a, b in zip(times, times[1:], strict=False)} == {3600.0}


def test_repr() -> None:
    assert repr(CronSchedule("* * * * *", misfire_tolerance=5)) == (
        "CronSchedule('* * * * *', misfire_tolerance=5.0, timezone=datetime.timezone.utc)"
    )


# ------------------------------------------------------------------ CronRunner


@pytest.mark.anyio
async def test_fires_at_exact_minute_boundaries() -> None:
    clock = FakeClock()
    cb = Recorder(clock)
    r = runner(CronSchedule("* * * * *"), cb, clock, max_fires=3)
    await r.run()
    expected = [MINUTE0, MINUTE0 + 60, MINUTE0 + 120]
    assert cb.calls == [(t, t) for t in expected]
    assert r.fires == expected
    assert r.missed == []
    assert clock.now == MINUTE0 + 120
    assert max(clock.sleeps) <= 1.0  # sleeps in chunks so clock jumps are noticed


@pytest.mark.anyio
async def test_first_fire_is_next_cron_time_not_immediate() -> None:
    clock = FakeClock(MINUTE0)  # started exactly on a boundary
    cb = Recorder(clock)
    await runner(CronSchedule("* * * * *"), cb, clock, max_fires=1).run()
    assert cb.calls == [(MINUTE0 + 60, MINUTE0 + 60)]


@pytest.mark.anyio
async def test_six_field_expression_fires_every_five_seconds() -> None:
    clock = FakeClock()
    cb = Recorder(clock)
    r = runner(CronSchedule("*/5 * * * * *", misfire_tolerance=0), cb, clock, max_fires=4)
    await r.run()
    assert r.fires == [T0 + 5, T0 + 10, T0 + 15, T0 + 20]


@pytest.mark.anyio
async def test_slow_callback_coalesces_within_tolerance_and_misses_older(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock()
    cb = Recorder(clock, takes=150.0)  # overruns the 60 s interval past two fire times
    r = runner(CronSchedule("* * * * *", misfire_tolerance=60), cb, clock, max_fires=2)
    with caplog.at_level(logging.WARNING, logger="mocra_core.schedule"):
        await r.run()
    # fire at M0 runs until M0+150; M0+60 is 90 s late (missed), M0+120 is 30 s late (runs once)
    assert cb.calls == [(MINUTE0, MINUTE0), (MINUTE0 + 120, MINUTE0 + 150)]
    assert r.missed == [MINUTE0 + 60]
    [record] = [rec for rec in caplog.records if rec.levelno == logging.WARNING]
    assert "1 fire(s) missed" in record.getMessage()
    assert "'* * * * *'" in record.getMessage()


@pytest.mark.anyio
async def test_slow_callback_beyond_tolerance_runs_nothing_late() -> None:
    clock = FakeClock()
    cb = Recorder(clock, takes=130.0)  # ends at M0+130: M0+60 and M0+120 are 70 s and 10 s late
    r = runner(CronSchedule("* * * * *", misfire_tolerance=5), cb, clock, max_fires=2)
    await r.run()
    assert r.fires == [MINUTE0, MINUTE0 + 180]
    assert r.missed == [MINUTE0 + 60, MINUTE0 + 120]


@pytest.mark.anyio
async def test_zero_tolerance_runs_only_exact_fires() -> None:
    clock = FakeClock()
    cb = Recorder(clock, takes=0.5)  # each run ends half a second after the fire time
    r = runner(CronSchedule("* * * * * *", misfire_tolerance=0), cb, clock, max_fires=3)
    await r.run()
    # the next fire (1 s later) is still ahead when the callback returns: all run on time
    assert [fire for fire, called in cb.calls if fire == called] == r.fires == [T0 + 1, T0 + 2, T0 + 3]

    clock = FakeClock()
    cb = Recorder(clock, takes=1.5)  # now every next fire is already 0.5 s late
    r = runner(CronSchedule("* * * * * *", misfire_tolerance=0), cb, clock, max_fires=2)
    await r.run()
    # T0+2 is 0.5 s late when the first run ends (missed); T0+3 is slept to and runs on time
    assert r.fires == [T0 + 1, T0 + 3]
    assert r.missed == [T0 + 2]


@pytest.mark.anyio
async def test_clock_jump_forward_is_noticed_within_a_second() -> None:
    hour = 1_700_002_800.0  # 2023-11-14T23:00:00Z
    clock = FakeClock(hour - 60)
    cb = Recorder(clock)
    jumped = False

    async def sleep(seconds: float) -> None:
        nonlocal jumped
        await clock.sleep(seconds)
        if not jumped:
            jumped = True
            clock.now += 100.0  # e.g. the machine was suspended, or NTP stepped the clock

    r = CronRunner(CronSchedule("0 * * * *", misfire_tolerance=60), cb, clock=clock, sleep=sleep, max_fires=1)
    await r.run()
    # one 1 s nap, then the jump to hour+41 is seen at once: the fire is 41 s late, within tolerance
    # (a single 60 s sleep would have woken at hour+100 and missed it)
    assert cb.calls == [(hour, hour + 41)]
    assert r.missed == []


@pytest.mark.anyio
async def test_leader_gating_skips_then_resumes() -> None:
    clock = FakeClock()
    cb = Recorder(clock)
    leader_at = {MINUTE0 + 60, MINUTE0 + 180}  # leader only at some fire times
    asked: list[float] = []

    async def is_leader() -> bool:
        asked.append(clock.now)
        return clock.now in leader_at

    r = runner(CronSchedule("* * * * *"), cb, clock, is_leader=is_leader, max_fires=2)
    await r.run()
    assert r.fires == [MINUTE0 + 60, MINUTE0 + 180]
    assert r.skipped == [MINUTE0, MINUTE0 + 120]
    assert r.missed == []
    assert asked == [MINUTE0 + 60 * i for i in range(4)]  # asked once per fire, not while sleeping


@pytest.mark.anyio
async def test_start_at_in_the_past_catches_up_once() -> None:
    clock = FakeClock(MINUTE0 + 600 + 20)
    cb = Recorder(clock)
    r = runner(CronSchedule("* * * * *", misfire_tolerance=30), cb, clock, start_at=MINUTE0 - 1, max_fires=2)
    await r.run()
    assert r.fires == [MINUTE0 + 600, MINUTE0 + 660]
    assert r.missed == [MINUTE0 + 60 * i for i in range(10)]
    assert cb.calls[0] == (MINUTE0 + 600, MINUTE0 + 620)  # immediately, without sleeping first


@pytest.mark.anyio
async def test_callback_error_propagates() -> None:
    clock = FakeClock()

    async def boom(fire_time: float) -> None:
        raise RuntimeError(f"failed at {fire_time}")

    r = CronRunner(CronSchedule("* * * * *"), boom, clock=clock, sleep=clock.sleep)
    with pytest.raises(RuntimeError, match=f"failed at {MINUTE0}"):
        await r.run()
    assert r.fires == []


@pytest.mark.anyio
async def test_runs_until_cancelled_without_max_fires() -> None:
    clock = FakeClock()
    cb = Recorder(clock)
    r = runner(CronSchedule("* * * * *"), cb, clock)
    with anyio.move_on_after(1):  # real time bound only as a safety net; the fake clock stops it earlier
        async with anyio.create_task_group() as tg:

            async def stop_after_five() -> None:
                while len(r.fires) < 5:
                    await anyio.lowlevel.checkpoint()
                tg.cancel_scope.cancel()

            tg.start_soon(r.run)
            tg.start_soon(stop_after_five)
    assert r.fires == [MINUTE0 + 60 * i for i in range(5)]


@pytest.mark.anyio
async def test_real_clock_smoke() -> None:
    cb: list[float] = []

    async def record(fire_time: float) -> None:
        cb.append(fire_time)

    # start_at in the past: the latest due second runs at once, with the real clock and anyio.sleep
    every_second = CronSchedule("* * * * * *", misfire_tolerance=5)
    r = CronRunner(every_second, record, start_at=time.time() - 2, max_fires=1)
    with anyio.fail_after(5):
        await r.run()
    assert len(cb) == 1
    assert cb[0] == int(cb[0])
