"""`FigureTracker`: turns the engine's `Progress` reports into the `Figures` a progress display shows."""

from __future__ import annotations

import collections
import dataclasses
import time
from typing import TYPE_CHECKING

from mocra_core.topics import REQUESTS, TASKS, module_of, stage_of

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from mocra_core import Progress
    from mocra_core.observe import StatsSnapshot

__all__ = ("FigureTracker", "Figures", "QueueDepths", "clock_text", "counts_text", "plain_text", "rate_text")


@dataclasses.dataclass(frozen=True)
class QueueDepths:
    """What waits in each stage's queue, named for a user.

    Start tasks to generate, requests to download, responses to parse (and the responses of each module).

    Example:
        >>> queued = {"task": 1, "request": 40, "response": 0, "response-books": 3, "response-authors": 2}
        >>> QueueDepths.of(queued)
        QueueDepths(generate=1, download=40, parse=5, parse_by_module={'books': 3, 'authors': 2})
    """

    generate: int = 0
    download: int = 0
    parse: int = 0
    parse_by_module: dict[str, int] = dataclasses.field(default_factory=dict)

    @classmethod
    def of(cls, queued: Mapping[str, int]) -> QueueDepths:
        """Sum the depths of `Progress.queued` (by topic) by stage."""
        generate = download = parse = 0
        by_module: dict[str, int] = {}
        for topic, count in queued.items():
            stage = stage_of(topic)
            if stage == TASKS:
                generate += count
            elif stage == REQUESTS:
                download += count
            else:
                parse += count
                module = module_of(topic)
                if module is not None:
                    by_module[module] = by_module.get(module, 0) + count
        return cls(generate, download, parse, by_module)


@dataclasses.dataclass(frozen=True)
class Figures:
    """One frame of a progress display.

    `rate_now` is pages per second over the last few seconds (`FigureTracker`'s window); the overall rate
    is `stats.pages_per_second`. `elapsed` is the run's seconds so far, ticking between two reports.
    """

    stats: StatsSnapshot
    queues: QueueDepths
    rate_now: float
    elapsed: float


class FigureTracker:
    """Keeps the latest `Progress` report and the recent page rate; safe to read from a drawing thread.

    Args:
        window: Seconds over which `Figures.rate_now` counts pages.
        clock: Seconds, monotonic (injected by tests).
    """

    def __init__(self, *, window: float = 10.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._window = window
        self._clock = clock
        self._samples: collections.deque[tuple[float, int]] = collections.deque()
        self._latest: tuple[Figures, float] | None = None  # replaced whole, so a reader sees one report

    def add(self, progress: Progress) -> Figures:
        """Take a report of the engine; returns its figures."""
        now, stats = self._clock(), progress.stats
        samples = self._samples
        if not samples:  # the run began `elapsed` seconds ago with no page
            samples.append((now - stats.elapsed, 0))
        samples.append((now, stats.responses))
        while len(samples) > 2 and samples[1][0] <= now - self._window:
            samples.popleft()
        (then, before) = samples[0]
        rate = (stats.responses - before) / (now - then) if now > then else stats.pages_per_second
        figures = Figures(stats, QueueDepths.of(progress.queued), rate, stats.elapsed)
        self._latest = (figures, now)
        return figures

    def figures(self) -> Figures | None:
        """The latest report's figures, its elapsed time brought up to now; None before the first."""
        latest = self._latest
        if latest is None:
            return None
        figures, at = latest
        return dataclasses.replace(figures, elapsed=figures.elapsed + max(0.0, self._clock() - at))


def counts_text(stats: StatsSnapshot) -> str:
    """Pages, items, errors and dead letters, as the progress display and the summary both name them.

    Example:
        >>> from mocra_core.observe import StatsSnapshot
        >>> counts_text(StatsSnapshot(responses=1200, items=1100, errors=1, dead_lettered=2))
        'pages 1,200 | items 1,100 | errors 1 | dead letters 2'
    """
    return (
        f"pages {stats.responses:,} | items {stats.items:,} | errors {stats.errors:,} | "
        f"dead letters {stats.dead_lettered:,}"
    )


def rate_text(pages_per_second: float) -> str:
    """A rate with one decimal below 100/s, none above.

    Example:
        >>> rate_text(4.25), rate_text(1234.5)
        ('4.2', '1,234')
    """
    return f"{pages_per_second:,.1f}" if pages_per_second < 100 else f"{pages_per_second:,.0f}"


def clock_text(seconds: float) -> str:
    """Seconds as h:mm:ss.

    Example:
        >>> clock_text(3725.9)
        '1:02:05'
    """
    whole = int(seconds)
    return f"{whole // 3600}:{whole % 3600 // 60:02}:{whole % 60:02}"


def plain_text(figures: Figures) -> str:
    """One line of figures, for a log (no escape codes).

    Example:
        >>> from mocra_core.observe import StatsSnapshot
        >>> stats = StatsSnapshot(responses=120, items=100, elapsed=60.0, concurrency=12)
        >>> plain_text(Figures(stats, QueueDepths(download=40, parse=2), rate_now=3.5, elapsed=61.0))
        'pages 120 | items 100 | errors 0 | dead letters 0 | 3.5 pages/s (2.0 overall) | queued: generate 0, download 40, parse 2 | autoscale 12 | 0:01:01'
    """  # noqa: E501
    s, q = figures.stats, figures.queues
    text = (
        f"{counts_text(s)} | {rate_text(figures.rate_now)} pages/s ({rate_text(s.pages_per_second)} overall)"
        f" | queued: generate {q.generate:,}, download {q.download:,}, parse {q.parse:,}"
    )
    if s.concurrency:
        text += f" | autoscale {s.concurrency}"
    return f"{text} | {clock_text(figures.elapsed)}"
