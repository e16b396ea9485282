"""`ProgressLine`: a live one-line display on a terminal, periodic log lines otherwise."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from mocra_core import Progress

__all__ = ("ProgressLine",)

logger = logging.getLogger("mocra.progress")


class ProgressLine:
    """Shows pages, items, errors, pages/s and queue depth; rewrites one line on a TTY.

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
        text = (
            f"pages {s.responses:,} | items {s.items:,} | errors {s.errors + s.dead_lettered:,} | "
            f"{rate:,.0f} pages/s | queued {queued:,}"
        )
        if self._tty:
            self._stream.write("\r\x1b[2K" + text)
            self._stream.flush()
            self._drawn = True
        elif now - self._last_log >= self._log_every:
            self._last_log = now
            logger.info("%s", text)

    def finish(self) -> None:
        """End the live line."""
        if self._drawn:
            self._stream.write("\n")
            self._stream.flush()
