"""The run summary names the hosts most dropped as out of scope, right after the drops."""

from __future__ import annotations

import io

from mocra import CrawlResult
from mocra._run import print_summary
from mocra_core.observe import StatsSnapshot


def summary_of(stats: StatsSnapshot) -> list[str]:
    stream = io.StringIO()
    print_summary(CrawlResult(reason="finished", stats=stats), stream)
    return stream.getvalue().splitlines()


def test_the_summary_shows_the_top_offsite_hosts_after_the_drops() -> None:
    stats = StatsSnapshot(
        responses=3,
        dropped={"offsite": 9, "duplicate": 1},
        offsite_hosts={"ads.example.net": 5, "cdn.test": 3, "(other)": 1},
    )
    lines = summary_of(stats)
    dropped = next(i for i, line in enumerate(lines) if line.startswith("  dropped "))
    assert lines[dropped + 1] == "  offsite hosts: ads.example.net 5, cdn.test 3, (other) 1"


def test_no_offsite_line_without_offsite_drops() -> None:
    lines = summary_of(StatsSnapshot(responses=3, dropped={"duplicate": 1}))
    assert not any("offsite" in line for line in lines)
    assert any(line.startswith("  dropped ") for line in lines)
