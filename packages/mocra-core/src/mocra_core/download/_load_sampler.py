"""`LoadSampler`: how busy this process is — CPU, memory, event-loop lag — sampled by one sleeping task.

Each sample costs a few microseconds: `time.process_time()`, one read of `/proc/self/statm` (RSS) and, on
Linux, one read of `/proc/stat` (the machine's CPU, reported, not acted on). The event-loop lag is the
overshoot of the sampler's own sleep: a loop busy with other callbacks (or blocked by a CPU-bound one)
wakes it late. No threads.
"""

from __future__ import annotations

import os
import sys
import time
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from collections.abc import Callable

    from anyio.abc import TaskStatus

__all__ = ("LoadSample", "LoadSampler", "memory_limit", "resident_bytes")

_CGROUP_LIMITS = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")


@dataclass(frozen=True, slots=True)
class LoadSample:
    """One sample of the process's load. Durations are seconds.

    Attributes:
        at: When it was taken (monotonic seconds).
        cpu: Process CPU seconds per wall second since the previous sample (1.0 = one core busy).
        machine_cpu: The machine's busy fraction over all cores since the previous sample (None if unknown).
        memory: Resident set size over the memory limit (0 when the size is unknown).
        loop_lag: How late the sampler's sleep ended (the event loop's lag).
    """

    at: float
    cpu: float
    machine_cpu: float | None
    memory: float
    loop_lag: float


def resident_bytes() -> int:
    """This process's resident set size in bytes (Linux: current; elsewhere: peak; 0 if unknown)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return 0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def _physical_bytes() -> int:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):  # pragma: no cover - no sysconf
        return 0


def memory_limit(fraction_of_ram: float = 0.25) -> int:
    """The memory this process may use, in bytes: its cgroup's limit, else `fraction_of_ram` of the RAM.

    A cgroup "limit" at or above the machine's RAM (cgroup v1's "no limit" is 2**63) counts as none.
    Returns 0 when neither is known (the memory signal is then off).
    """
    physical = _physical_bytes()
    for path in _CGROUP_LIMITS:
        try:
            with open(path) as f:
                text = f.read().strip()
        except OSError:
            continue
        if text.isdigit() and (not physical or int(text) < physical):
            return int(text)
    return int(physical * fraction_of_ram)


class _MachineCpu:
    """The machine's busy fraction between two reads of `/proc/stat` (Linux only; None elsewhere)."""

    def __init__(self) -> None:
        self._last = self._read()

    @staticmethod
    def _read() -> tuple[int, int] | None:
        try:
            with open("/proc/stat", "rb") as f:
                fields = [int(v) for v in f.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
        return sum(fields), idle

    def busy(self) -> float | None:
        now = self._read()
        last, self._last = self._last, now
        if now is None or last is None or now[0] <= last[0]:
            return None
        total = now[0] - last[0]
        return max(0.0, min(1.0, 1.0 - (now[1] - last[1]) / total))


class LoadSampler:
    """Samples CPU, memory and event-loop lag every `interval` seconds and keeps the last `keep` samples.

    Run it with `await tg.start(sampler.run)` in a task group the caller owns; cancel the group to stop.

    Args:
        interval: Seconds between samples (also the period of the lag probe).
        memory_limit_bytes: What RSS is measured against; 0 turns the memory signal off.
        keep: Samples kept (older ones are dropped).
        clock: Monotonic seconds (inject a fake one in tests, with `cpu_clock`).
        cpu_clock: Process CPU seconds.

    Example:
        >>> sampler = LoadSampler(interval=0.01)
        >>> async def main() -> bool:
        ...     async with anyio.create_task_group() as tg:
        ...         await tg.start(sampler.run)
        ...         await anyio.sleep(0.05)
        ...         tg.cancel_scope.cancel()
        ...     return len(sampler.samples) > 0
        >>> anyio.run(main)
        True
    """

    def __init__(
        self,
        *,
        interval: float = 0.2,
        memory_limit_bytes: int | None = None,
        keep: int = 256,
        clock: Callable[[], float] = time.monotonic,
        cpu_clock: Callable[[], float] = time.process_time,
    ) -> None:
        if not interval > 0:
            raise ValueError(f"interval: must be > 0, got {interval!r}")
        self.interval = interval
        self.memory_limit_bytes = memory_limit() if memory_limit_bytes is None else memory_limit_bytes
        self.samples: deque[LoadSample] = deque(maxlen=keep)
        self._clock = clock
        self._cpu_clock = cpu_clock
        self._machine = _MachineCpu()
        self.on_sample: Callable[[LoadSample], object] | None = None
        """Called with each new sample (the autoscaler notes how many slots were in use then)."""

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Sample until cancelled."""
        wall, cpu = self._clock(), self._cpu_clock()
        task_status.started()
        while True:
            await anyio.sleep(self.interval)
            now, cpu_now = self._clock(), self._cpu_clock()
            sample = self._sample(now, now - wall, cpu_now - cpu)
            self.samples.append(sample)
            wall, cpu = now, cpu_now
            if self.on_sample is not None:
                self.on_sample(sample)

    def since(self, at: float) -> list[LoadSample]:
        """The samples taken after `at` (monotonic seconds), oldest first."""
        return [s for s in self.samples if s.at > at]

    def _sample(self, now: float, wall: float, cpu: float) -> LoadSample:
        rss = resident_bytes() if self.memory_limit_bytes else 0
        return LoadSample(
            at=now,
            cpu=cpu / wall if wall > 0 else 0.0,
            machine_cpu=self._machine.busy(),
            memory=rss / self.memory_limit_bytes if self.memory_limit_bytes else 0.0,
            loop_lag=max(0.0, wall - self.interval),
        )
