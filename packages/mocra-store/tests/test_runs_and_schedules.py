"""Schedules (enabled only) and run records (started, finished, newest first, kept after deletes)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from mocra_store import NotFound, ScheduleEntry, Store, StoreError

pytestmark = pytest.mark.anyio

BASE: dict[str, Any] = {
    "platforms": {"shop": {}},
    "modules": {"prices": {}, "reviews": {}},
    "accounts": {"alice": {}},
}


async def test_schedules_lists_the_enabled_ones(url: str) -> None:
    async with Store.open(url) as store:
        await store.import_tenants(
            {
                **BASE,
                "schedules": [
                    {"module": "prices", "account": "alice", "cron": "0 * * * *"},
                    {"module": "prices", "cron": "*/5 * * * *", "misfire": 5},
                    {"module": "reviews", "platform": "shop", "cron": "0 0 * * *", "enabled": False},
                ],
            }
        )

        found = await store.schedules()

    assert found == [
        ScheduleEntry("prices", None, None, "*/5 * * * *", 5.0),
        ScheduleEntry("prices", "alice", None, "0 * * * *", 60.0),
    ]


async def test_importing_a_schedule_again_updates_it(url: str) -> None:
    async with Store.open(url) as store:
        await store.import_tenants({**BASE, "schedules": [{"module": "prices", "cron": "0 * * * *"}]})
        await store.import_tenants({"schedules": [{"module": "prices", "cron": "0 * * * *", "misfire": 1}]})

        assert await store.schedules() == [ScheduleEntry("prices", None, None, "0 * * * *", 1.0)]


async def test_a_run_is_recorded_from_start_to_finish(url: str) -> None:
    before = datetime.now(UTC)
    async with Store.open(url) as store:
        await store.run_started("run-1", account="alice", platform="shop", module="prices", worker="w1")
        (running,) = await store.runs()
        await store.run_finished(
            "run-1", status="failed", stats={"pages": 3, "errors": {"http": 1}}, error="boom"
        )
        (done,) = await store.runs()

    assert (running.status, running.finished_at, running.worker) == ("running", None, "w1")
    assert running.started_at.tzinfo == UTC and running.started_at >= before.replace(microsecond=0)
    assert (done.status, done.stats, done.error) == ("failed", {"pages": 3, "errors": {"http": 1}}, "boom")
    assert done.finished_at is not None and done.finished_at >= done.started_at


async def test_runs_are_newest_first_filtered_and_limited(url: str) -> None:
    async with Store.open(url) as store:
        for i, (module, account) in enumerate(
            [("prices", "alice"), ("reviews", "alice"), ("prices", "bob"), ("prices", None)]
        ):
            await store.run_started(f"r{i}", account=account, platform=None, module=module, worker="w")

        newest = [r.run_id for r in await store.runs()]
        prices = [r.run_id for r in await store.runs(module="prices")]
        alice_prices = [r.run_id for r in await store.runs(module="prices", account="alice")]
        two = [r.run_id for r in await store.runs(limit=2)]

    assert newest == ["r3", "r2", "r1", "r0"]
    assert prices == ["r3", "r2", "r0"]
    assert alice_prices == ["r0"]
    assert two == ["r3", "r2"]


async def test_run_history_survives_deleting_the_tenants(url: str) -> None:
    async with Store.open(url) as store:
        await store.import_tenants(BASE)
        await store.run_started("r1", account="alice", platform="shop", module="prices", worker="w")
        await store.run_finished("r1", status="succeeded", stats={})
        await store.delete("account", "alice")
        await store.delete("module", "prices")

        (kept,) = await store.runs(account="alice")

    assert (kept.account, kept.module, kept.status) == ("alice", "prices", "succeeded")


async def test_run_mistakes_are_named(url: str) -> None:
    async with Store.open(url) as store:
        await store.run_started("r1", account=None, platform=None, module="prices", worker="w")
        with pytest.raises(StoreError, match="run 'r1' was started already"):
            await store.run_started("r1", account=None, platform=None, module="prices", worker="w")
        with pytest.raises(ValueError, match="status must be one of succeeded, failed, cancelled"):
            await store.run_finished("r1", status="running", stats={})
        with pytest.raises(NotFound, match="no run 'r9' was started"):
            await store.run_finished("r9", status="cancelled", stats={})
