"""A seen set (or coordination store, or broker) out of reach for a moment delays work; it loses none."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from mocra_core import MocraBuilder, on_item
from mocra_core.dedup import MemorySeenSet, SeenSetError
from mocra_core.engine import _plan, _transient
from mocra_core.testing import LocalServer

from .test_crawl import Item, LinkSpider, page

pytestmark = pytest.mark.anyio


class FlakySeenSet(MemorySeenSet):
    """Fails its first `failures` calls, as a Raft seen set does during an election."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures

    async def add_if_absent(self, fingerprints: Sequence[bytes]) -> list[bool]:
        if self.failures:
            self.failures -= 1
            raise SeenSetError("seen", "no quorum: an election is running")
        return await super().add_if_absent(fingerprints)


async def test_a_seen_set_out_of_reach_delays_the_page_and_loses_nothing(
    builder: MocraBuilder, server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(5):
        server.route(f"/p/{n}", page(*([f"/p/{n + 1}"] if n + 1 < 5 else [])))
    flaky = FlakySeenSet(failures=2)
    monkeypatch.setattr(_plan.BackendPlan, "make_seen", lambda *_args, **_kw: flaky)
    monkeypatch.setattr(_transient, "RETRY_DELAY", 0.01)
    items: list[Item] = []

    result: Any = await builder.spider(LinkSpider(server.url("/p/0")), on_item(items.append)).run_async()

    assert result.reason == "finished"
    assert sorted(item.url for item in items) == [server.url(f"/p/{n}") for n in range(5)]
    assert result.ok  # nothing dead-lettered
    assert result.stats.retries >= 2
    assert flaky.failures == 0
