"""The admin API's security, one test each: keys on writes and reads, rate limit, CORS, malformed bodies."""

from __future__ import annotations

import hmac

import pytest

from mocra_core.admin import KeyRing
from mocra_core.config import AdminSettings

from .fake_jobs import FakeView, api

pytestmark = pytest.mark.anyio

KEY = "s3cret-key"


async def test_no_key_configured_refuses_writes_with_403() -> None:
    view = FakeView()
    async with api(view) as client:
        answer = await client.post("/api/v1/jobs/books/pause", headers={"Authorization": f"Bearer {KEY}"})
        read = await client.get("/api/v1/jobs/books")
    assert answer.status_code == 403
    assert "admin.keys" in answer.json()["error"]
    assert view.control_state == "running"
    assert read.status_code == 200  # reads stay open by default


async def test_wrong_or_missing_key_is_401() -> None:
    view = FakeView()
    async with api(view, settings=AdminSettings(keys=[KEY])) as client:
        wrong = await client.post("/api/v1/jobs/books/pause", headers={"X-API-Key": "guess"})
        missing = await client.post("/api/v1/jobs/books/pause")
        not_bearer = await client.post("/api/v1/jobs/books/pause", headers={"Authorization": f"Basic {KEY}"})
    assert [a.status_code for a in (wrong, missing, not_bearer)] == [401, 401, 401]
    assert wrong.json() == {"error": "wrong API key"}
    assert "Authorization: Bearer" in missing.json()["error"]
    assert view.control_state == "running"


@pytest.mark.parametrize("header", ["Authorization", "X-API-Key"])
async def test_the_right_key_in_either_header_is_let_in(header: str) -> None:
    view = FakeView()
    value = f"Bearer {KEY}" if header == "Authorization" else KEY
    async with api(view, settings=AdminSettings(keys=["other", KEY])) as client:
        answer = await client.post("/api/v1/jobs/books/pause", headers={header: value})
    assert (answer.status_code, answer.json()) == (200, {"control": "paused"})
    assert view.control_state == "paused"


async def test_a_key_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MOCRA_ADMIN_KEYS", f"first,{KEY}")
    async with api(FakeView()) as client:
        answer = await client.post("/api/v1/jobs/books/stop", headers={"X-API-Key": KEY})
    assert answer.json() == {"control": "stopping"}


async def test_read_keys_makes_reads_need_a_key_but_not_the_probes() -> None:
    async with api(FakeView(), settings=AdminSettings(keys=[KEY], read_keys=True)) as client:
        unkeyed = [await client.get(path) for path in ("/api/v1/jobs", "/api/v1/jobs/books", "/metrics")]
        keyed = await client.get("/api/v1/jobs", headers={"X-API-Key": KEY})
        probes = [await client.get(path) for path in ("/health", "/ready")]
    assert [a.status_code for a in unkeyed] == [401, 401, 401]
    assert keyed.status_code == 200
    assert [a.status_code for a in probes] == [200, 200]


async def test_rate_limit_answers_429_with_retry_after() -> None:
    settings = AdminSettings(keys=[KEY], rate=1.0, burst=3)
    async with api(FakeView(), settings=settings) as client:
        headers = {"X-API-Key": KEY}
        answers = [await client.post("/api/v1/jobs/books/resume", headers=headers) for _ in range(5)]
        other_client_unkeyed_read = await client.get("/api/v1/jobs")
    assert [a.status_code for a in answers] == [200, 200, 200, 429, 429]
    assert int(answers[3].headers["Retry-After"]) >= 1
    assert "too many requests" in answers[3].json()["error"]
    assert other_client_unkeyed_read.status_code == 200  # unkeyed reads are not a key's


async def test_wrong_keys_are_rate_limited_per_client() -> None:
    settings = AdminSettings(keys=[KEY], rate=1.0, burst=2)
    async with api(FakeView(), settings=settings) as client:
        headers = {"X-API-Key": "guess"}
        answers = [await client.post("/api/v1/jobs/books/pause", headers=headers) for _ in range(4)]
    assert [a.status_code for a in answers] == [401, 401, 429, 429]


async def test_cors_is_off_by_default() -> None:
    async with api(FakeView()) as client:
        answer = await client.get("/api/v1/jobs", headers={"Origin": "https://evil.example"})
        preflight = await client.options(
            "/api/v1/jobs/books/pause",
            headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"},
        )
    assert "access-control-allow-origin" not in answer.headers
    assert "access-control-allow-origin" not in preflight.headers


async def test_cors_on_when_configured() -> None:
    origin = "https://ops.example"
    settings = AdminSettings(keys=[KEY], cors_origins=[origin])
    async with api(FakeView(), settings=settings) as client:
        answer = await client.get("/api/v1/jobs", headers={"Origin": origin})
        other = await client.get("/api/v1/jobs", headers={"Origin": "https://evil.example"})
        preflight = await client.options(
            "/api/v1/jobs/books/pause",
            headers={
                "Origin": origin,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "Authorization",
            },
        )
    assert answer.headers["access-control-allow-origin"] == origin
    assert "access-control-allow-origin" not in other.headers
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == origin


@pytest.mark.parametrize(
    ("body", "named"),
    [
        (b'{"topics": "request"}', "$.topics"),
        (b'{"topics": ["request", 7]}', "$.topics[1]"),
        (b'{"topics": ["request"', "malformed JSON"),
        (b'{"topic": ["request"]}', "topic"),
    ],
)
async def test_malformed_json_is_400_naming_the_field(body: bytes, named: str) -> None:
    view = FakeView()
    headers = {"X-API-Key": KEY, "Content-Type": "application/json"}
    async with api(view, settings=AdminSettings(keys=[KEY])) as client:
        answer = await client.post("/api/v1/jobs/books/dlq/replay", content=body, headers=headers)
    assert answer.status_code == 400
    assert named in answer.json()["error"]
    assert len(view.letters) == 3


def test_keys_are_compared_in_constant_time_against_every_key(monkeypatch: pytest.MonkeyPatch) -> None:
    compared: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    ring = KeyRing(["alpha", "beta", "gamma"])
    assert ring.match("alpha") == 0
    assert ring.match("nope") is None
    # every key is compared, even after a match: the time does not tell which key matched
    assert [b for _, b in compared] == [b"alpha", b"beta", b"gamma"] * 2
