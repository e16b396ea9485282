"""A run stopped by an operator (`JobView.stop`): `mocra run` says so and exits 0; its record is cancelled."""

from __future__ import annotations

import io

from mocra import CrawlResult
from mocra._cli import _EXIT_CODES
from mocra._run import print_summary
from mocra_core.metadata import run_status
from mocra_core.observe import StatsSnapshot


def test_a_stopped_run_says_an_operator_stopped_it_and_exits_0() -> None:
    stream = io.StringIO()
    print_summary(CrawlResult(reason="stopped", stats=StatsSnapshot(responses=3)), stream)

    assert stream.getvalue().startswith("stopped: 3 pages")
    assert "stopped by an operator" in stream.getvalue()
    assert _EXIT_CODES.get("stopped", 0) == 0
    assert run_status("stopped") == "cancelled"
