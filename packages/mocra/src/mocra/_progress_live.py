"""`LiveProgress`: the live progress panel on a terminal, drawn with rich."""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING, TextIO

from rich.file_proxy import FileProxy
from rich.live import Live
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ._progress_figures import clock_text, counts_text, rate_text

if TYPE_CHECKING:
    from rich.console import Console

    from mocra_core import Progress
    from mocra_core.observe import StatsSnapshot

    from ._progress_figures import Figures, FigureTracker

__all__ = ("LiveProgress", "render_figures")


def render_figures(figures: Figures, *, top_domains: int = 3) -> Panel:
    """The panel of one frame: counts, rates, autoscale, queue depth per stage, the busiest domains.

    Args:
        figures: What to show.
        top_domains: How many of the most fetched domains to name (0: none).
    """
    s, q = figures.stats, figures.queues
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column(justify="right")
    grid.add_column(style="dim")
    rates = f"{rate_text(figures.rate_now)} pages/s now · {rate_text(s.pages_per_second)} overall"
    grid.add_row("pages", f"{s.responses:,}", rates)
    grid.add_row("items", f"{s.items:,}", "")
    grid.add_row("errors", Text(f"{s.errors:,}", style="red" if s.errors else ""), "")
    grid.add_row("dead letters", Text(f"{s.dead_lettered:,}", style="yellow" if s.dead_lettered else ""), "")
    if s.concurrency:
        grid.add_row("autoscale", f"{s.concurrency:,}", "downloads at once")
    grid.add_row("to generate", f"{q.generate:,}", "start tasks queued")
    grid.add_row("to download", f"{q.download:,}", "requests queued")
    modules = " · ".join(f"{name} {count:,}" for name, count in q.parse_by_module.items())
    grid.add_row("to parse", f"{q.parse:,}", modules if len(q.parse_by_module) > 1 else "responses queued")
    domains = list(s.domains.items())[:top_domains]
    if domains:
        grid.add_row("top domains", "", " · ".join(f"{host} {count:,}" for host, count in domains))
    title = Text(f"mocra · {clock_text(figures.elapsed)}")
    return Panel(grid, title=title, title_align="left", border_style="blue", expand=False)


class LiveProgress:
    """Draws `render_figures` on a terminal `console`, `refresh_per_second` times a second.

    The panel starts with the first report. While it is shown, the log lines that the root logger's
    handlers write to the console's file, and (when the console draws on `sys.stderr`) what is written
    to `sys.stderr` (and to `sys.stdout` when that is the terminal too), are printed above it.

    Args:
        console: A terminal console.
        tracker: Where the figures come from.
        top_domains: How many of the most fetched domains to name.
        refresh_per_second: Redraws per second (the elapsed time ticks between the engine's reports).
    """

    def __init__(
        self,
        console: Console,
        tracker: FigureTracker,
        *,
        top_domains: int = 3,
        refresh_per_second: float = 4.0,
    ) -> None:
        self._console = console
        self._tracker = tracker
        self._top_domains = top_domains
        on_stderr = console.file is sys.stderr
        self._live = Live(
            console=console,
            refresh_per_second=refresh_per_second,
            transient=True,
            redirect_stderr=on_stderr,
            redirect_stdout=on_stderr and sys.stdout.isatty(),
            get_renderable=self._frame,
        )
        self._started = False
        self._moved: list[tuple[logging.StreamHandler[TextIO], TextIO]] = []

    def _frame(self) -> Panel | Text:
        figures = self._tracker.figures()
        return Text("") if figures is None else render_figures(figures, top_domains=self._top_domains)

    def update(self, progress: Progress) -> None:
        """Take a report of the engine and redraw at once."""
        self._tracker.add(progress)
        if not self._started:
            self._started = True
            self._live.start()
            self._move_log_handlers()
        self._live.refresh()

    def finish(self, final: StatsSnapshot | None = None) -> None:
        """Take the panel away; with the run's `final` stats, leave one line of its last figures."""
        drawn = self._started
        self.close()
        if drawn and final is not None:
            rate, elapsed = rate_text(final.pages_per_second), clock_text(final.elapsed)
            self._console.print(Text(f"{counts_text(final)} | {rate} pages/s | {elapsed}"))

    def close(self) -> None:
        """Take the panel away (idempotent); the log lines go straight to the terminal again."""
        if self._started:
            self._started = False
            self._live.stop()
        for handler, stream in self._moved:
            handler.setStream(stream)
        self._moved.clear()

    def _move_log_handlers(self) -> None:
        target = self._console.file
        for handler in logging.getLogger().handlers:
            if isinstance(handler, logging.StreamHandler) and handler.stream is target:
                self._moved.append((handler, target))
                handler.setStream(FileProxy(self._console, target))
