"""Cron schedules (`CronSchedule`) and the loop that fires them (`CronRunner`).

Expressions have 5 fields (``minute hour day month weekday``, minute precision) or 6 fields with the
**seconds first** (``second minute hour day month weekday``, as Quartz, Spring and the Rust ``cron`` crate
write it; croniter's default would put them last). ``@hourly``-style aliases work too. Fire times are
computed by croniter in the schedule's time zone, UTC by default. In a zone with daylight saving time,
croniter fires a wall-clock time that occurs twice (autumn) twice and a time that does not exist (spring)
at the first valid time after it; keep UTC when intervals must be exact.
"""

from __future__ import annotations

import datetime
import logging
import math
import time
from typing import TYPE_CHECKING

import anyio
from croniter import CroniterError, croniter

from .._errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

__all__ = ("CronRunner", "CronSchedule")

logger = logging.getLogger(__name__)

_MAX_LISTED_MISSED = 1000
"""`CronSchedule.due` lists at most this many missed times (a week offline at one fire per second is 600k)."""

_MAX_SLEEP = 1.0
"""`CronRunner` re-reads the clock at least this often (seconds), so clock jumps are noticed."""


class CronSchedule:
    """A cron expression with a misfire tolerance.

    A fire time is *due* once the clock has reached it. It may still run while it is at most
    `misfire_tolerance` seconds late; several due times are coalesced into the latest one (as APScheduler's
    ``coalesce=True``), and every due time that does not run is *missed*.

    Args:
        expression: 5 fields (``"*/15 * * * *"``: every 15 minutes) or 6 with seconds first
            (``"*/5 * * * * *"``: every 5 seconds).
        misfire_tolerance: How late (seconds) a fire time may still run; 0 runs only on-time fires.
        timezone: Zone the fields are read in.

    Raises:
        ConfigError: The expression is not valid cron (key ``"cron"``, message names it) or never fires,
            or the tolerance is negative.

    Example:
        >>> every_5s = CronSchedule("*/5 * * * * *", misfire_tolerance=3)
        >>> every_5s.next_after(0.0), every_5s.next_after(5.0)
        (5.0, 10.0)
        >>> every_5s.due(last_fire=0.0, now=17.0)  # 15 is 2 s late: runs; 5 and 10 are missed
        ([15.0], [5.0, 10.0])
        >>> every_5s.due(last_fire=0.0, now=19.0)  # 15 is 4 s late: missed as well
        ([], [5.0, 10.0, 15.0])
        >>> from mocra_core import ConfigError
        >>> try:
        ...     CronSchedule("61 * * * *")
        ... except ConfigError as exc:
        ...     print(exc)
        <code>: cron: invalid cron expression '61 * * * *': [61 * * * *] is not acceptable, out of range
    """

    __slots__ = ("_seconds_first", "expression", "misfire_tolerance", "timezone")

    def __init__(
        self,
        expression: str,
        *,
        misfire_tolerance: float = 60.0,
        timezone: datetime.tzinfo = datetime.UTC,
    ) -> None:
        if not misfire_tolerance >= 0:  # also rejects NaN
            raise ConfigError("cron", f"misfire_tolerance must be >= 0 seconds, got {misfire_tolerance!r}")
        n_fields = len(expression.split())
        if not expression.lstrip().startswith("@") and n_fields not in (5, 6):
            raise ConfigError(
                "cron",
                f"invalid cron expression {expression!r}: expected 5 fields (minute hour day month weekday)"
                f" or 6 (second minute hour day month weekday), got {n_fields}",
            )
        self.expression = expression
        self.misfire_tolerance = float(misfire_tolerance)
        self.timezone = timezone
        self._seconds_first = n_fields == 6
        try:
            self._iter(0.0).get_next(float)  # parses, and fails for dates that never come (Feb 30)
        except CroniterError as exc:
            raise ConfigError("cron", f"invalid cron expression {expression!r}: {exc}") from exc

    def __repr__(self) -> str:
        return (
            f"CronSchedule({self.expression!r}, misfire_tolerance={self.misfire_tolerance!r},"
            f" timezone={self.timezone!r})"
        )

    def _iter(self, start: float) -> croniter[float]:
        start_dt = datetime.datetime.fromtimestamp(start, self.timezone)
        return croniter(self.expression, start_dt, float, second_at_beginning=self._seconds_first)

    def next_after(self, t: float) -> float:
        """Return the first fire time strictly after `t`.

        Args:
            t: Epoch seconds.

        Returns:
            Epoch seconds of the next fire time (a whole second).
        """
        return self._iter(t).get_next(float)

    def _latest_at_or_before(self, t: float) -> float:
        # Fire times are whole seconds and croniter's get_prev is strict, so start just past floor(t).
        return self._iter(math.floor(t) + 1).get_prev(float)

    def due(self, last_fire: float | None, now: float) -> tuple[list[float], list[float]]:
        """Split the fire times in ``(last_fire, now]`` into those to run and those missed.

        Only the latest due time runs, and only if ``now - time <= misfire_tolerance``; the others are
        missed (at most 1000 are listed, the oldest). With no `last_fire` (nothing has run yet) only the
        latest due time counts: it runs if it is within the tolerance, and nothing is missed.

        Args:
            last_fire: When the schedule was last evaluated (epoch seconds), or None.
            now: The current time (epoch seconds).

        Returns:
            ``(to_run, missed)``, both ascending; `to_run` holds at most one time.
        """
        latest = self._latest_at_or_before(now)
        to_run = [latest] if now - latest <= self.misfire_tolerance else []
        if last_fire is None:
            return to_run, []
        if latest <= last_fire:
            return [], []
        missed: list[float] = []
        it = self._iter(last_fire)
        while len(missed) < _MAX_LISTED_MISSED and (t := it.get_next(float)) < latest:
            missed.append(t)
        if not to_run and len(missed) < _MAX_LISTED_MISSED:
            missed.append(latest)
        return to_run, missed


class CronRunner:
    """Fires `callback(fire_time)` on schedule, only while `is_leader()` says so.

    `run` sleeps until the next fire time (waking at least every second, so a clock jump is noticed; if
    the clock steps back, the fire waits for the wall clock to reach it again), then asks `is_leader` and
    awaits `callback` with the fire time (epoch seconds) inline: fires never overlap and no task outlives
    `run`. A callback that overruns later fire times is caught up as `CronSchedule.due` says: the latest
    fire within the tolerance runs once, older ones are missed and logged at WARNING. When `is_leader`
    returns False the due fires are skipped (neither run nor missed); firing resumes as soon as it
    returns True. An exception from `callback` or `is_leader` propagates out of `run`. Cancelling `run`
    cancels a running callback.

    Attributes:
        fires: Fire times whose callback completed, in order.
        missed: Fire times that came due while leader but did not run (coalesced into a later one, or
            later than the tolerance).
        skipped: Fire times that came due while not leader.

    Args:
        schedule: When to fire.
        callback: Awaited with each fire time.
        is_leader: Asked before each fire; None means always (a single node).
        clock: Wall clock, epoch seconds.
        sleep: Sleeps the given seconds; tests pass a fake that advances `clock`.
        start_at: The last-fire reference (epoch seconds); fire times after it are due. Defaults to the
            clock when `run` starts, so the first fire is the next cron time, not an immediate one. A
            persisted last fire time makes a restarted node catch up (coalesced) on what it slept through.
        max_fires: Return after this many completed fires (skipped and missed ones do not count).

    Example:
        >>> import anyio
        >>> async def report(fire_time: float) -> None:
        ...     print("fired for", fire_time)
        >>> hourly = CronSchedule("@hourly", misfire_tolerance=60)
        >>> # Restarted at 02:00:30 after a last fire at 00:00: the 02:00 fire is 30 s late and runs.
        >>> runner = CronRunner(hourly, report, clock=lambda: 7230.0, start_at=0.0, max_fires=1)
        >>> anyio.run(runner.run)
        fired for 7200.0
        >>> runner.fires, runner.missed
        ([7200.0], [3600.0])
    """

    def __init__(
        self,
        schedule: CronSchedule,
        callback: Callable[[float], Awaitable[None]],
        *,
        is_leader: Callable[[], Awaitable[bool]] | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
        start_at: float | None = None,
        max_fires: int | None = None,
    ) -> None:
        self._schedule = schedule
        self._callback = callback
        self._is_leader = is_leader
        self._clock = clock
        self._sleep = sleep
        self._start_at = start_at
        self._max_fires = max_fires
        self.fires: list[float] = []
        self.missed: list[float] = []
        self.skipped: list[float] = []

    def __repr__(self) -> str:
        return f"CronRunner({self._schedule!r}, fires={len(self.fires)}, missed={len(self.missed)})"

    async def run(self) -> None:
        """Fire on schedule until cancelled or `max_fires` fires have completed."""
        schedule = self._schedule
        last = self._clock() if self._start_at is None else self._start_at
        done = 0
        while self._max_fires is None or done < self._max_fires:
            target = schedule.next_after(last)
            now = self._clock()
            while now < target:
                await self._sleep(min(target - now, _MAX_SLEEP))
                now = self._clock()
            to_run, missed = schedule.due(last, now)
            last = now
            if self._is_leader is not None and not await self._is_leader():
                self.skipped += missed + to_run
                logger.debug("cron %r: not leader, skipping %s", schedule.expression, to_run or missed)
                continue
            if missed:
                self.missed += missed
                logger.warning(
                    "cron %r: %d fire(s) missed (coalesced, or over the %.3g s tolerance), oldest at %s",
                    schedule.expression,
                    len(missed),
                    schedule.misfire_tolerance,
                    datetime.datetime.fromtimestamp(missed[0], datetime.UTC).isoformat(),
                )
            for fire_time in to_run:
                await self._callback(fire_time)
                self.fires.append(fire_time)
                done += 1
