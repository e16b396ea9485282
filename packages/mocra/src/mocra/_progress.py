"""`ProgressLine`: a live one-line display on a terminal, periodic log lines otherwise."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from mocra_core import Progress
    from mocra_core.observe import StatsSnapshot

__all__ = ("ProgressLine", "counts_text")

logger = logging.getLogger("mocra.progress")


class ProgressLine:
    """Shows pages, items, errors, dead letters, pages/s, queue depth (and autoscale); one line on a TTY.

    Args:
        stream: Where to draw on a terminal (usually stderr).
        log_every: Seconds between log lines when `stream` is not a terminal.
    """

    def __init__(self, stream: TextIO, *, log_every: float = 10.0) -> None:
        self._stream = stream
        self._tty = stream.isatty()
        self._log_every = log_every
        self._last_log = time.monotonic()
        self._last: tuple[float, int] | None = None
        self._drawn = False

    def update(self, progress: Progress) -> None:
        """Draw or log the latest figures."""
        s = progress.stats
        now = time.monotonic()
        rate = s.pages_per_second
        if self._last is not None and now > self._last[0]:
            rate = (s.responses - self._last[1]) / (now - self._last[0])
        self._last = (now, s.responses)
        queued = sum(progress.queued.values())
        text = f"{counts_text(s)} | {rate:,.0f} pages/s | queued {queued:,}"
        if s.concurrency:
            text += f" | autoscale {s.concurrency}"
        if self._tty:
            self._stream.write("\r\x1b[2K" + text)
            self._stream.flush()
            self._drawn = True
        elif now - self._last_log >= self._log_every:
            self._last_log = now
            logger.info("%s", text)

    def finish(self, final: StatsSnapshot | None = None) -> None:
        """End the live line; with the run's `final` stats, its last figures are those of the summary."""
        if self._drawn:
            if final is not None:
                self._stream.write(f"\r\x1b[2K{counts_text(final)} | {final.pages_per_second:,.0f} pages/s")
            self._stream.write("\n")
            self._stream.flush()


def counts_text(stats: StatsSnapshot) -> str:
    """Pages, items, errors and dead letters, as the progress line and the summary both name them.

    Example:
        >>> from mocra_core.observe import StatsSnapshot
        >>> counts_text(StatsSnapshot(responses=1200, items=1100, errors=1, dead_lettered=2))
        'pages 1,200 | items 1,100 | errors 1 | dead letters 2'
    """
    return (
        f"pages {stats.responses:,} | items {stats.items:,} | errors {stats.errors:,} | "
        f"dead letters {stats.dead_lettered:,}"
    )
