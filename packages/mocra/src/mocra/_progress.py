"""`ProgressDisplay`: a live panel on a terminal, periodic plain log lines otherwise, or nothing.

`mocra run` and `mocra demo` feed it the engine's `Progress` reports (one a second). On a terminal it
draws a rich panel (`LiveProgress`): pages, items, errors, dead letters, pages/s now and overall, the
autoscaler's concurrency, what waits to be generated, downloaded and parsed (by module when there are
several), the busiest domains and the elapsed time; it is taken away at the end, leaving one line of the
final figures. Off a terminal (a pipe, a file, CI) it logs one plain line (`plain_text`) every `every`
seconds on the `mocra.progress` logger, without escape codes. `--progress off` (or `--no-progress`)
turns it off; `--progress plain` keeps the plain lines on a terminal.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Literal, Protocol, get_args

from mocra_core import ConfigError

from ._progress_figures import FigureTracker, counts_text, plain_text

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from types import TracebackType
    from typing import TextIO

    from rich.console import Console

    from mocra_core import Progress
    from mocra_core.observe import StatsSnapshot

__all__ = ("ProgressDisplay", "ProgressMode", "add_progress_arguments", "counts_text")

logger = logging.getLogger("mocra.progress")

ProgressMode = Literal["auto", "live", "plain", "off"]
"""`auto`: live on a terminal, plain otherwise; `live`: the panel even off a terminal; `plain`; `off`."""


class _Drawing(Protocol):
    def update(self, progress: Progress) -> None: ...
    def finish(self, final: StatsSnapshot | None) -> None: ...
    def close(self) -> None: ...


class PlainProgress:
    """Logs `plain_text` of the latest report at INFO on `mocra.progress`, at most once every `every` seconds.

    Args:
        tracker: Where the figures come from.
        every: Seconds between two lines; the first comes `every` seconds after the start.
        clock: Seconds, monotonic (injected by tests).
    """

    def __init__(self, tracker: FigureTracker, *, every: float, clock: Callable[[], float]) -> None:
        self._tracker = tracker
        self._every = every
        self._clock = clock
        self._last = clock()

    def update(self, progress: Progress) -> None:
        """Take a report of the engine; log it if the last line is `every` seconds old."""
        figures = self._tracker.add(progress)
        now = self._clock()
        if now - self._last >= self._every:
            self._last = now
            logger.info("%s", plain_text(figures))

    def finish(self, final: StatsSnapshot | None) -> None:
        """Nothing to take away: the summary follows."""

    def close(self) -> None:
        """Nothing to take away."""


class ProgressDisplay:
    """What `mocra run` shows while it crawls; use it as a context manager so a failed run clears it.

    Args:
        stream: The terminal to draw on (usually `sys.stderr`); whether it is one picks the `auto` mode.
        mode: `auto`, `live`, `plain` or `off` (see `ProgressMode`).
        every: Seconds between two plain lines.
        console: The rich console to draw on (tests pass one); by default one on `stream`.
        clock: Seconds, monotonic (injected by tests).

    Example:
        >>> import io
        >>> with ProgressDisplay(io.StringIO()) as progress:  # not a terminal: plain lines
        ...     progress.mode
        'plain'
    """

    def __init__(
        self,
        stream: TextIO,
        *,
        mode: ProgressMode = "auto",
        every: float = 10.0,
        console: Console | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if mode not in get_args(ProgressMode):
            expected = ", ".join(get_args(ProgressMode))
            raise ConfigError("--progress", f"{mode!r} is not one of {expected}", source="command line")
        if every <= 0:
            raise ConfigError("--progress-every", f"{every!r}: expected seconds > 0", source="command line")
        tracker = FigureTracker(clock=clock)
        self._drawing: _Drawing | None = None
        if mode in ("auto", "live"):
            from rich.console import Console

            if console is None:
                console = Console(file=stream, force_terminal=True if mode == "live" else None)
            mode = "live" if console.is_terminal and not console.is_dumb_terminal else "plain"
            if mode == "live":
                from ._progress_live import LiveProgress

                self._drawing = LiveProgress(console, tracker)
        if mode == "plain":
            self._drawing = PlainProgress(tracker, every=every, clock=clock)
        self.mode: ProgressMode = mode
        """What it shows, `auto` resolved: `live`, `plain` or `off`."""

    def update(self, progress: Progress) -> None:
        """Take a report of the engine (pass this method as the run's `progress` callback)."""
        if self._drawing is not None:
            self._drawing.update(progress)

    def finish(self, final: StatsSnapshot | None = None) -> None:
        """End the display; the live panel leaves one line of the run's `final` stats."""
        if self._drawing is not None:
            self._drawing.finish(final)

    def close(self) -> None:
        """End the display without a last line (idempotent)."""
        if self._drawing is not None:
            self._drawing.close()

    def __enter__(self) -> ProgressDisplay:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def add_progress_arguments(parser: argparse.ArgumentParser) -> None:
    """Add `--progress MODE`, `--no-progress` and `--progress-every SECONDS` to `parser`."""
    parser.add_argument(
        "--progress",
        choices=get_args(ProgressMode),
        default="auto",
        help="the live display: auto (a panel on a terminal, plain log lines otherwise; the default), "
        "live, plain or off",
    )
    parser.add_argument(
        "--no-progress", dest="progress", action="store_const", const="off", help="same as --progress off"
    )
    parser.add_argument(
        "--progress-every",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="seconds between two plain progress lines (default 10)",
    )
