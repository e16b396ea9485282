"""The admin API's routes over a real socket: probes, jobs, snapshots, events, dead letters, control."""

from __future__ import annotations

import anyio
import httpx
import msgspec
import pytest

from mocra_core.admin import AdminServer, StartRequest
from mocra_core.config import AdminSettings
from mocra_core.control import JobSnapshot

from .fake_jobs import FakeView, api

pytestmark = pytest.mark.anyio

KEY = "k-123"
KEYED = AdminSettings(keys=[KEY])
AUTH = {"Authorization": f"Bearer {KEY}"}


async def test_health_and_ready() -> None:
    async with api() as client:
        assert (await client.get("/health")).json() == {"status": "ok"}
        ready = await client.get("/ready")
        assert (ready.status_code, ready.json()) == (200, {"state": "idle"})


async def test_ready_answers_503_with_the_state_when_not_ready() -> None:
    async with api(readiness=lambda: (False, "draining")) as client:
        ready = await client.get("/ready")
    assert (ready.status_code, ready.json()) == (503, {"state": "draining"})


async def test_jobs_list_and_snapshot() -> None:
    view = FakeView("books")
    view.stats.response("example.com", 200, 512, 0.01)
    async with api(view, FakeView("news", state="stopped")) as client:
        jobs = (await client.get("/api/v1/jobs")).json()
        snapshot = msgspec.json.decode((await client.get("/api/v1/jobs/books")).content, type=JobSnapshot)
        missing = await client.get("/api/v1/jobs/nope")
    assert jobs == [
        {"job": "books", "state": "active", "control": "running"},
        {"job": "news", "state": "stopped", "control": "running"},
    ]
    assert (snapshot.job, snapshot.run.responses, snapshot.queues["request"].pending) == ("books", 1, 2)
    assert missing.status_code == 404 and "no job 'nope'" in missing.json()["error"]


async def test_dead_letters_and_replay() -> None:
    view = FakeView()
    async with api(view, settings=KEYED) as client:
        listed = (await client.get("/api/v1/jobs/books/dlq", params={"topic": "request", "limit": 2})).json()
        bad_limit = await client.get("/api/v1/jobs/books/dlq", params={"limit": "many"})
        replayed = await client.post(
            "/api/v1/jobs/books/dlq/replay", json={"topics": ["request"]}, headers=AUTH
        )
    assert [d["id"] for d in listed] == ["m0", "m1"]
    assert bad_limit.status_code == 400 and "limit" in bad_limit.json()["error"]
    assert replayed.json() == {"replayed": 3} and view.letters == []


async def test_pause_resume_stop() -> None:
    view = FakeView()
    async with api(view, settings=KEYED) as client:
        answers = [
            (await client.post(f"/api/v1/jobs/books/{action}", headers=AUTH)).json()
            for action in ("pause", "resume", "stop")
        ]
    assert answers == [{"control": "paused"}, {"control": "running"}, {"control": "stopping"}]


async def test_events_stream_snapshots_every_interval() -> None:
    view = FakeView()
    async with api(view) as client:
        events: list[JobSnapshot] = []
        async with client.stream("GET", "/api/v1/jobs/books/events", params={"interval": 0.2}) as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            kind = ""
            async for line in stream.aiter_lines():
                if line.startswith("event: "):
                    kind = line.removeprefix("event: ")
                elif line.startswith("data: ") and kind == "snapshot":
                    events.append(msgspec.json.decode(line.removeprefix("data: "), type=JobSnapshot))
                    if len(events) == 3:
                        break
        too_fast = await client.get("/api/v1/jobs/books/events", params={"interval": 0.01})
    assert [e.job for e in events] == ["books"] * 3
    assert events[0].time < events[2].time
    assert too_fast.status_code == 400 and "interval" in too_fast.json()["error"]


async def test_event_stream_ends_when_the_server_stops() -> None:
    from mocra_core.admin import AdminContext
    from mocra_core.control import JobRegistry

    registry = JobRegistry()
    registry.add(FakeView())
    server = AdminServer(AdminContext(jobs=registry, readiness=lambda: (True, "idle")), "127.0.0.1:0")
    lines: list[str] = []
    async with anyio.create_task_group() as group:
        await group.start(server.serve)
        async with httpx.AsyncClient(base_url=server.url) as client:
            async with client.stream("GET", "/api/v1/jobs/books/events", params={"interval": 60}) as stream:
                with anyio.fail_after(10):
                    async for line in stream.aiter_lines():
                        lines.append(line)
                        if line.startswith("data: "):
                            server.stop()  # the stream ends although its next snapshot is a minute away
    assert sum(line.startswith("data: ") for line in lines) == 1


async def test_start_without_a_starter_is_404() -> None:
    async with api(settings=KEYED) as client:
        answer = await client.post("/api/v1/jobs", json={"spider": "books"}, headers=AUTH)
    assert answer.status_code == 404 and "mocra serve" in answer.json()["error"]


async def test_unknown_path_and_method_are_json_errors() -> None:
    async with api() as client:
        nowhere = await client.get("/api/v1/nowhere")
        wrong_method = await client.put("/api/v1/jobs")
    assert nowhere.status_code == 404 and "no such path" in nowhere.json()["error"]
    assert wrong_method.status_code in (403, 405) and "error" in wrong_method.json()


async def test_metrics_is_prometheus_text() -> None:
    async with api(FakeView()) as client:
        answer = await client.get("/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")
    assert "# TYPE" in answer.text


async def test_cluster_is_empty_without_one() -> None:
    async with api(FakeView()) as client:
        assert (await client.get("/api/v1/cluster")).json() == []


async def test_store_routes_need_a_store() -> None:
    async with api() as client:
        answer = await client.get("/api/v1/store/accounts")
    assert answer.status_code == 404 and "[store] url" in answer.json()["error"]


async def test_store_accounts_and_runs(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from mocra_core.metadata import open_store

    url = f"sqlite:///{tmp_path / 'store.db'}"
    async with open_store(url, migrate=True) as store:
        await store.import_tenants({"accounts": {"alice": {}, "bob": {"enabled": False}}})
    async with api(store_url=url) as client:
        accounts = (await client.get("/api/v1/store/accounts")).json()
        runs = await client.get("/api/v1/store/runs", params={"limit": 5})
        bad = await client.get("/api/v1/store/runs", params={"limit": 0})
    assert accounts == [{"name": "alice", "enabled": True}, {"name": "bob", "enabled": False}]
    assert (runs.status_code, runs.json()) == (200, [])
    assert bad.status_code == 400


def test_start_request_names_a_wrong_field() -> None:
    with pytest.raises(msgspec.ValidationError, match=r"\$\.start_urls\[0\]"):
        msgspec.json.decode(b'{"spider": "x", "start_urls": [1]}', type=StartRequest)
