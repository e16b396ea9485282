"""`AutoscaledConcurrency`: how many requests may be in flight, grown while the process has headroom.

Crawlee's `AutoscaledPool` + `Snapshotter` + `SystemStatus` are the anchor: a `LoadSampler` samples CPU,
memory and event-loop lag; every `scale_interval` the window's samples are judged (a resource is overloaded
when more than its share of samples — Crawlee's 40 % CPU, 20 % memory, 60 % loop lag — pass its limit) and
the desired concurrency shrinks (any resource overloaded), grows (none overloaded and the slots in use)
or stays, always within [min, max]. Workers hold a slot of the gate (`acquire`/`release`, or `slot()`)
while they work; lowering the desired concurrency takes no slot away, it only stops handing new ones out.
"""

from __future__ import annotations

import math
from collections import deque
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio
import msgspec

from .._bounds import at_least, positive
from ._load_sampler import LoadSample, LoadSampler

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Sequence

    from anyio.abc import TaskStatus

__all__ = ("AutoscaleSettings", "AutoscaleState", "AutoscaledConcurrency")

OVERLOAD_SHARE = {"cpu": 0.4, "memory": 0.2, "loop lag": 0.6}
"""Share of a window's samples over its limit that makes a resource overloaded (Crawlee's `SystemStatus`)."""
SATURATED = 0.8
"""Growing needs the slots in use, on average over the window, to be at least this share of the desired."""


class AutoscaleSettings(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """How the number of requests in flight follows the process's load. Durations are seconds.

    Attributes:
        enabled: Autoscale (`crawl.autoscale`); off, the concurrency stays at `crawl.concurrency`.
        min_concurrency: Never fewer requests in flight than this (`crawl.min_concurrency`).
        start_concurrency: Where to start; unset: a quarter of the maximum (at least `min_concurrency`).
        sample_interval: Seconds between load samples (and the lag probe's period).
        scale_interval: Seconds between two scaling decisions (each judges the samples taken since the last).
        step_up: Growth per decision, as a share of the desired concurrency (rounded up: at least 1).
        step_down: Shrinkage per decision, same.
        max_cpu: Process CPU seconds per wall second above which the CPU counts as overloaded.
        max_memory: Share of the memory limit above which memory counts as overloaded.
        max_loop_lag: Event-loop lag (seconds) above which the loop counts as overloaded.
        memory_limit_bytes: What memory is measured against; unset: the cgroup's limit, else 1/4 of the RAM.

    Example:
        >>> AutoscaleSettings(min_concurrency=0)
        Traceback (most recent call last):
        ...
        ValueError: min_concurrency: must be at least 1, got 0
    """

    enabled: bool = False
    min_concurrency: int = 4
    start_concurrency: int | None = None
    sample_interval: float = 0.1
    scale_interval: float = 1.0
    step_up: float = 0.2
    step_down: float = 0.2
    max_cpu: float = 0.95
    max_memory: float = 0.9
    max_loop_lag: float = 0.05
    memory_limit_bytes: int | None = None

    def __post_init__(self) -> None:
        at_least(self, 1, "min_concurrency", "start_concurrency", "memory_limit_bytes")
        positive(self, "sample_interval", "scale_interval", "step_up", "step_down")
        positive(self, "max_cpu", "max_memory", "max_loop_lag")
        if self.scale_interval < self.sample_interval:
            raise ValueError(
                f"scale_interval: must be at least sample_interval ({self.sample_interval!r}), "
                f"got {self.scale_interval!r}"
            )


@dataclass(frozen=True, slots=True)
class AutoscaleState:
    """A snapshot for stats and the progress line: the concurrency, the load behind it, the last decision.

    Attributes:
        desired: Slots handed out at most right now.
        running: Slots held.
        waiting: Tasks waiting for a slot.
        cpu: Mean process CPU (seconds per wall second) over the last window.
        machine_cpu: Mean busy share of the machine's CPUs over the last window (None if unknown).
        memory: Highest share of the memory limit over the last window.
        loop_lag: Highest event-loop lag (seconds) over the last window.
        reason: Why the last decision grew, shrank or held the concurrency.
        scaled: Decisions that changed the desired concurrency so far.
    """

    desired: int
    running: int
    waiting: int
    cpu: float
    machine_cpu: float | None
    memory: float
    loop_lag: float
    reason: str
    scaled: int


class AutoscaledConcurrency:
    """A gate of `desired` slots whose size follows the process's CPU, memory and event-loop headroom.

    Run `run` in a task group the caller owns (`await tg.start(auto.run)`); cancelling the group stops the
    sampling and the scaling, and the gate keeps its last size. Workers take a slot before they take work
    and give it back after (`async with auto.slot():`, or `acquire`/`release`); waiting tasks are served
    first come, first served, and cancelling a waiting task passes its place on.

    `idle` may be set to a callable counting the slot holders that have no work right now (the download
    stage's workers waiting for a request): growing needs the slots in use, and a held slot whose worker
    waits for work is not in use.

    Args:
        settings: The autoscale settings.
        max_concurrency: The upper bound (`crawl.concurrency`).
        sampler: Where the load comes from (default: a `LoadSampler` from the settings).

    Example:
        >>> auto = AutoscaledConcurrency(AutoscaleSettings(min_concurrency=2), max_concurrency=16)
        >>> auto.desired, auto.try_acquire(), auto.running
        (4, True, 1)
        >>> auto.release()
        >>> auto.decide([LoadSample(at=1.0, cpu=0.2, machine_cpu=None, memory=0.1, loop_lag=0.001)], used=4.0)
        (5, 'grew: headroom (cpu 0.20, memory 10%, loop lag 1 ms)')
    """

    def __init__(
        self,
        settings: AutoscaleSettings,
        *,
        max_concurrency: int,
        sampler: LoadSampler | None = None,
    ) -> None:
        if max_concurrency < settings.min_concurrency:
            raise ValueError(
                f"max_concurrency: must be at least min_concurrency ({settings.min_concurrency}), "
                f"got {max_concurrency!r}"
            )
        self.settings = settings
        self.min = settings.min_concurrency
        self.max = max_concurrency
        start = settings.start_concurrency or math.ceil(max_concurrency / 4)
        self.desired = max(self.min, min(self.max, start))
        self.running = 0
        self.idle: Callable[[], int] = lambda: 0
        self.on_rescale: Callable[[int], object] = lambda desired: None  # told each new `desired`
        self.sampler = sampler or LoadSampler(
            interval=settings.sample_interval, memory_limit_bytes=settings.memory_limit_bytes
        )
        self._waiters: deque[anyio.Event] = deque()
        self._window: list[LoadSample] = []
        self._used: list[int] = []
        self._reason = "started"
        self._scaled = 0
        self._last: Sequence[LoadSample] = ()

    # ------------------------------------------------------------------ the gate

    def try_acquire(self) -> bool:
        """Take a slot if one is free now (and nobody waits for one); never waits."""
        if self.running < self.desired and not self._waiters:
            self.running += 1
            return True
        return False

    async def acquire(self) -> None:
        """Take a slot, waiting for one if `desired` are held."""
        if self.try_acquire():
            return
        event = anyio.Event()
        self._waiters.append(event)
        try:
            await event.wait()
        except BaseException:
            if event.is_set():  # a slot was handed to us: pass it on
                self.release()
            else:
                self._waiters.remove(event)
            raise

    def release(self) -> None:
        """Give a slot back (wakes the next waiting task if the gate has room)."""
        self.running -= 1
        self._wake()

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold a slot for the duration of the block."""
        await self.acquire()
        try:
            yield
        finally:
            self.release()

    # ------------------------------------------------------------------ scaling

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Sample the load and rescale every `scale_interval` until cancelled."""
        self.sampler.on_sample = self._on_sample
        async with anyio.create_task_group() as tg:
            await tg.start(self.sampler.run)
            task_status.started()
            while True:
                await anyio.sleep(self.settings.scale_interval)
                self.rescale()

    def rescale(self) -> None:
        """Judge the samples taken since the last call and set `desired` (`run` calls it on its own)."""
        window, used = self._window, self._used
        self._window, self._used = [], []
        if not window:
            return
        mean_used = sum(used) / len(used) if used else float(self.running)
        desired, self._reason = self.decide(window, used=mean_used)
        self._last = window
        if desired != self.desired:
            self._scaled += 1
            self.desired = desired
            self.on_rescale(desired)
            self._wake()

    def decide(self, window: Sequence[LoadSample], *, used: float) -> tuple[int, str]:
        """The next desired concurrency and why, from a window of samples and the mean slots in use."""
        overloaded = self._overloaded(window)
        if overloaded:
            if self.desired <= self.min:
                return self.desired, f"held at the minimum: {overloaded}"
            step = math.ceil(self.settings.step_down * self.desired)
            return max(self.min, self.desired - step), f"shrank: {overloaded}"
        if self.desired >= self.max:
            return self.desired, "held at the maximum"
        if used < SATURATED * self.desired:
            return self.desired, f"held: not saturated ({used:.1f} of {self.desired} slots in use)"
        step = math.ceil(self.settings.step_up * self.desired)
        return min(self.max, self.desired + step), f"grew: headroom ({_describe(window)})"

    def state(self) -> AutoscaleState:
        """A snapshot of the gate and of the load behind the last decision."""
        window = self._last
        machine = [s.machine_cpu for s in window if s.machine_cpu is not None]
        return AutoscaleState(
            desired=self.desired,
            running=self.running,
            waiting=len(self._waiters),
            cpu=sum(s.cpu for s in window) / len(window) if window else 0.0,
            machine_cpu=sum(machine) / len(machine) if machine else None,
            memory=max((s.memory for s in window), default=0.0),
            loop_lag=max((s.loop_lag for s in window), default=0.0),
            reason=self._reason,
            scaled=self._scaled,
        )

    # ------------------------------------------------------------------ internals

    def _on_sample(self, sample: LoadSample) -> None:
        self._window.append(sample)
        self._used.append(max(0, self.running - self.idle()))

    def _overloaded(self, window: Sequence[LoadSample]) -> str:
        """Which resources are overloaded over `window`, said for the log ('' when none)."""
        s = self.settings
        limits = {
            "cpu": ([x.cpu for x in window], s.max_cpu, "{:.2f}"),
            "memory": ([x.memory for x in window], s.max_memory, "{:.0%}"),
            "loop lag": ([x.loop_lag for x in window], s.max_loop_lag, "{:.3f}s"),
        }
        said = []
        for name, (values, limit, fmt) in limits.items():
            over = sum(v > limit for v in values) / len(values)
            if over > OVERLOAD_SHARE[name]:
                peak = fmt.format(max(values))
                said.append(f"{name} over {fmt.format(limit)} in {over:.0%} of samples (peak {peak})")
        return "; ".join(said)

    def _wake(self) -> None:
        while self._waiters and self.running < self.desired:
            self.running += 1
            self._waiters.popleft().set()

    def __repr__(self) -> str:
        return (
            f"<AutoscaledConcurrency desired={self.desired} running={self.running} [{self.min}, {self.max}]>"
        )


def _describe(window: Sequence[LoadSample]) -> str:
    cpu = sum(s.cpu for s in window) / len(window)
    memory = max(s.memory for s in window)
    lag = max(s.loop_lag for s in window)
    return f"cpu {cpu:.2f}, memory {memory:.0%}, loop lag {lag * 1000:.0f} ms"
