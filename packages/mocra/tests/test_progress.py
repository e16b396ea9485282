"""The progress display: a rich live panel on a terminal, plain log lines off one, or nothing."""

from __future__ import annotations

import io
import logging
import re

import pytest
from rich.console import Console

from mocra._cli import build_parser
from mocra._progress import ProgressDisplay
from mocra._progress_figures import FigureTracker
from mocra_core import ConfigError, Progress
from mocra_core.observe import StatsSnapshot


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


QUEUED = {"task": 1, "request": 40, "response": 0, "response-books": 3, "response-authors": 2}


def report(responses: int, elapsed: float, **fields: object) -> Progress:
    queued = fields.pop("queued", QUEUED)
    assert isinstance(queued, dict)
    return Progress(stats=StatsSnapshot(responses=responses, elapsed=elapsed, **fields), queued=queued)  # type: ignore[arg-type]


def terminal(width: int = 100) -> tuple[io.StringIO, Console]:
    out = io.StringIO()
    return out, Console(file=out, force_terminal=True, width=width, color_system=None)


def last_frame(text: str) -> str:
    """The last panel drawn (from its top border)."""
    return text[text.rindex("╭") :]


def test_the_live_panel_shows_counts_rates_autoscale_queues_domains_and_elapsed() -> None:
    out, console = terminal()
    clock = Clock()
    display = ProgressDisplay(out, console=console, clock=clock)
    assert display.mode == "live"

    display.update(report(100, 10.0, items=80))
    clock.now += 5
    domains = {"example.com": 140, "b.org": 15, "c.net": 4, "d.io": 1}
    display.update(report(160, 15.0, items=150, errors=2, dead_lettered=1, concurrency=12, domains=domains))
    frame = last_frame(out.getvalue())
    display.close()

    assert "\x1b[" in out.getvalue()  # drawn in place
    assert "mocra · 0:00:15" in frame
    assert re.search(r"pages\s+160\s+10\.7 pages/s now · 10\.7 overall", frame), frame
    assert re.search(r"items\s+150\b", frame), frame
    assert re.search(r"errors\s+2\b", frame) and re.search(r"dead letters\s+1\b", frame), frame
    assert re.search(r"autoscale\s+12\s+downloads at once", frame), frame
    assert re.search(r"to generate\s+1\s+start tasks queued", frame), frame
    assert re.search(r"to download\s+40\s+requests queued", frame), frame
    assert re.search(r"to parse\s+5\s+books 3 · authors 2", frame), frame
    assert "example.com 140 · b.org 15 · c.net 4" in frame and "d.io" not in frame, frame


def test_the_panel_names_no_autoscale_when_it_is_off_and_one_module_s_queue_plainly() -> None:
    out, console = terminal()
    display = ProgressDisplay(out, console=console, clock=Clock())
    display.update(report(5, 1.0, queued={"task": 0, "request": 2, "response": 0, "response-books": 7}))
    frame = last_frame(out.getvalue())
    display.close()
    assert "autoscale" not in frame and "top domains" not in frame
    assert re.search(r"to parse\s+7\s+responses queued", frame), frame


def test_the_panel_leaves_one_line_of_the_final_figures() -> None:
    out, console = terminal()
    display = ProgressDisplay(out, console=console, clock=Clock())
    display.update(report(10, 2.0))
    display.finish(StatsSnapshot(responses=1200, items=1100, errors=1, dead_lettered=2, elapsed=60.0))
    tail = out.getvalue().rsplit("\x1b[2K", 1)[-1]
    assert tail == "pages 1,200 | items 1,100 | errors 1 | dead letters 2 | 20.0 pages/s | 0:01:00\n"


def test_the_elapsed_time_ticks_between_reports_and_the_recent_rate_forgets_old_pages() -> None:
    clock = Clock()
    tracker = FigureTracker(window=10.0, clock=clock)
    assert tracker.figures() is None
    for second in range(1, 31):  # 100 pages/s for 20 s, then 10 pages/s
        clock.now += 1
        pages = 100 * min(second, 20) + 10 * max(0, second - 20)
        figures = tracker.add(report(pages, float(second)))
    assert figures.rate_now == pytest.approx(10.0)
    assert figures.stats.pages_per_second == pytest.approx(2100 / 30)
    clock.now += 2.5
    ticking = tracker.figures()
    assert ticking is not None and ticking.elapsed == pytest.approx(32.5)


def test_off_a_terminal_it_logs_a_plain_line_every_n_seconds(caplog: pytest.LogCaptureFixture) -> None:
    out, clock = io.StringIO(), Clock()
    display = ProgressDisplay(out, every=10.0, clock=clock)
    assert display.mode == "plain"
    with caplog.at_level(logging.INFO, logger="mocra.progress"):
        for second in range(1, 26):
            clock.now += 1
            display.update(report(10 * second, float(second), concurrency=4))
        display.finish(StatsSnapshot(responses=250, elapsed=25.0))

    lines = [r.getMessage() for r in caplog.records if r.name == "mocra.progress"]
    assert len(lines) == 2, lines  # at 10 s and 20 s
    assert lines[0] == (
        "pages 100 | items 0 | errors 0 | dead letters 0 | 10.0 pages/s (10.0 overall) | "
        "queued: generate 1, download 40, parse 5 | autoscale 4 | 0:00:10"
    )
    assert not any("\x1b" in line for line in lines)
    assert out.getvalue() == ""  # nothing drawn on the stream itself


def test_a_dumb_terminal_gets_plain_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "dumb")
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(name, raising=False)
    assert ProgressDisplay(Tty()).mode == "plain"
    assert ProgressDisplay(Tty(), mode="off").mode == "off"


def test_off_shows_nothing(caplog: pytest.LogCaptureFixture) -> None:
    out, console = terminal()
    with caplog.at_level(logging.INFO), ProgressDisplay(out, mode="off", console=console) as display:
        display.update(report(10, 1.0))
        display.finish(StatsSnapshot(responses=10))
    assert out.getvalue() == "" and not caplog.records


def test_log_lines_go_above_the_panel_and_a_failed_run_takes_it_away() -> None:
    out, console = terminal()
    handler = logging.StreamHandler(out)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        with pytest.raises(RuntimeError), ProgressDisplay(out, console=console, clock=Clock()) as display:
            display.update(report(10, 1.0))
            assert handler.stream is not out  # through the console, above the panel
            logging.getLogger("mocra.test").warning("a warning while the panel is up")
            raise RuntimeError("the run failed")
    finally:
        root.removeHandler(handler)
    text = out.getvalue()
    assert handler.stream is out
    assert "\x1b[?25h" in text[text.rindex("╭") :]  # the cursor is back
    assert text.endswith("\x1b[1A\x1b[2K")  # and the panel gone
    warning = text.index("a warning while the panel is up")
    assert text.rindex("╭", 0, warning) < warning < text.rindex("╭")  # the panel was drawn again below it


def test_cli_flags_turn_it_off_or_plain() -> None:
    parser = build_parser()
    assert parser.parse_args(["run", "spider.py"]).progress == "auto"
    assert parser.parse_args(["run", "spider.py", "--no-progress"]).progress == "off"
    plain = parser.parse_args(["run", "spider.py", "--progress", "plain", "--progress-every", "2.5"])
    assert (plain.progress, plain.progress_every) == ("plain", 2.5)
    assert parser.parse_args(["demo", "--no-progress"]).progress == "off"
    with pytest.raises(ConfigError, match="--progress-every: 0"):
        ProgressDisplay(io.StringIO(), every=0)
