"""Sources: static, file (reload, bad lines), provider (text, JSON, rate limit, errors), tunnel sessions."""

from __future__ import annotations

import logging
import os
import time
from typing import TYPE_CHECKING

import anyio
import httpx
import pytest

from mocra_proxy import (
    BadProxy,
    FileSource,
    ProviderError,
    ProviderSource,
    Proxy,
    ProxyPoolError,
    ProxySource,
    SourceError,
    StaticSource,
    TunnelSource,
)

if TYPE_CHECKING:
    import pathlib

    from conftest import Clock, Origin

pytestmark = pytest.mark.anyio


def ids(proxies: object) -> list[str]:
    return [p.redacted for p in proxies]  # type: ignore[attr-defined]


# ------------------------------------------------------------------------------------------ static


async def test_static_source_parses_once_and_keeps_tier_and_name() -> None:
    source = StaticSource(["http://u:pw@10.0.0.1:8080", Proxy.parse("10.0.0.2:3128", tier=2)], tier=1)
    proxies = await source.fetch()
    assert ids(proxies) == ["http://u:***@10.0.0.1:8080", "http://10.0.0.2:3128"]
    assert [p.tier for p in proxies] == [1, 2]
    assert proxies[0].source == "static"
    assert isinstance(source, ProxySource)


def test_static_source_rejects_a_bad_url_without_its_password() -> None:
    with pytest.raises(BadProxy) as caught:
        StaticSource(["ftp://u:topsecret@10.0.0.1:21"])
    assert "topsecret" not in str(caught.value)


# ------------------------------------------------------------------------------------------ file


async def test_file_source_skips_comments_blank_and_bad_lines(
    tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "proxies.txt"
    path.write_text(
        "# datacenter\n\n10.0.0.1:8080:alice:pw1\nnot a proxy\n"
        "http://bob:hunter2@10.0.0.2:3128/path\n  socks5://10.0.0.3:1080  \n"
    )
    with caplog.at_level(logging.WARNING, logger="mocra_proxy"):
        proxies = await FileSource(path, tier=1).fetch()
    assert ids(proxies) == ["http://alice:***@10.0.0.1:8080", "socks5://10.0.0.3:1080"]
    assert {p.tier for p in proxies} == {1}
    assert {p.source for p in proxies} == {str(path)}
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2
    assert lines[0].startswith(f"{path}:4: skipped")
    assert lines[1].startswith(f"{path}:5: skipped") and "bob:***" in lines[1]
    assert "hunter2" not in caplog.text


async def test_file_source_rereads_only_when_the_file_changes(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "proxies.txt"
    path.write_text("10.0.0.1:8080\n")
    source = FileSource(path)
    first = await source.fetch()
    assert await source.fetch() is first  # unchanged: not re-read
    path.write_text("10.0.0.1:8080\n10.0.0.2:8080\n")
    assert ids(await source.fetch()) == ["http://10.0.0.1:8080", "http://10.0.0.2:8080"]
    stat = path.stat()
    path.write_text("10.0.0.9:8080\n10.0.0.8:8080\n")  # same size: the mtime tells
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert ids(await source.fetch()) == ["http://10.0.0.9:8080", "http://10.0.0.8:8080"]


async def test_file_source_missing_file_is_a_source_error(tmp_path: pathlib.Path) -> None:
    source = FileSource(tmp_path / "absent.txt", name="office")
    with pytest.raises(SourceError, match="proxy source 'office': cannot read the file: FileNotFoundError"):
        await source.fetch()


# ------------------------------------------------------------------------------------------ provider


async def test_provider_text(origin: Origin) -> None:
    url = origin.route("/list", "10.0.0.1:8080:u:pw\n# note\r\nhttp://10.0.0.2:3128\r\n")
    source = ProviderSource(url, tier=2, ttl=60.0)
    before = time.time()
    proxies = await source.fetch()
    assert ids(proxies) == ["http://u:***@10.0.0.1:8080", "http://10.0.0.2:3128"]
    assert {p.tier for p in proxies} == {2}
    assert all(p.expires_at is not None and before + 60 <= p.expires_at <= time.time() + 60 for p in proxies)
    assert source.name == url and proxies[0].source == url


async def test_provider_json_strings_and_objects_with_fields(
    origin: Origin, caplog: pytest.LogCaptureFixture
) -> None:
    body = (
        b'{"data": {"proxies": ['
        b'"10.0.0.1:8080", '
        b'{"ip": "10.0.0.2", "port": "3128", "username": "u", "password": "s3cret", "expire": 2000000000}, '
        b'{"ip": "10.0.0.3", "port": 1080, "scheme": "socks5", "expire": "2033-05-18T03:33:20"}, '
        b'{"ip": "10.0.0.4"}, 42, '
        b'{"url": "http://v:pw@10.0.0.5:80"}'
        b"]}}"
    )
    url = origin.route("/v1", body, content_type="application/json")
    source = ProviderSource(
        url, format="json", json_path="data.proxies", fields={"host": "ip", "expires": "expire"}, ttl=5.0
    )
    with caplog.at_level(logging.WARNING, logger="mocra_proxy"):
        proxies = await source.fetch()
    assert ids(proxies) == [
        "http://10.0.0.1:8080",
        "http://u:***@10.0.0.2:3128",
        "socks5://10.0.0.3:1080",
        "http://v:***@10.0.0.5:80",
    ]
    assert proxies[1].password == "s3cret"
    assert proxies[1].expires_at == 2_000_000_000.0
    assert proxies[2].expires_at == 2_000_000_000.0
    assert proxies[0].expires_at is not None and proxies[0].expires_at < 2_000_000_000.0  # ttl
    assert [r.getMessage().split(":")[-2] for r in caplog.records] == [" item 3 skipped", " item 4 skipped"]


async def test_provider_keeps_its_rate_limit(origin: Origin, clock: Clock) -> None:
    url = origin.route("/list", "10.0.0.1:8080\n")
    source = ProviderSource(url, min_interval=30.0, clock=clock)
    first = await source.fetch()
    clock.now += 29.0
    assert await source.fetch() == first
    assert origin.hits["/list"] == 1  # the second call made no request
    clock.now += 1.0
    origin.route("/list", "10.0.0.2:8080\n")
    assert ids(await source.fetch()) == ["http://10.0.0.2:8080"]
    assert origin.hits["/list"] == 2


async def test_provider_concurrent_fetches_share_one_request(origin: Origin) -> None:
    url = origin.route("/list", "10.0.0.1:8080\n", delay=0.2)
    source = ProviderSource(url, min_interval=30.0)
    results: list[int] = []

    async def one() -> None:
        results.append(len(await source.fetch()))

    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(one)
    assert results == [1, 1, 1]
    assert origin.hits["/list"] == 1


async def test_provider_a_call_too_soon_after_a_failure_returns_the_last_batch(
    origin: Origin, clock: Clock
) -> None:
    url = origin.route("/list", "10.0.0.1:8080\n")
    source = ProviderSource(url, min_interval=10.0, clock=clock)
    await source.fetch()
    clock.now += 10.0
    origin.route("/list", "busy", status=503)
    with pytest.raises(ProviderError, match="HTTP 503"):
        await source.fetch()
    assert ids(await source.fetch()) == ["http://10.0.0.1:8080"]
    assert origin.hits["/list"] == 2


async def test_provider_drops_expired_proxies_from_the_last_batch(origin: Origin) -> None:
    url = origin.route("/list", "10.0.0.1:8080\n")
    source = ProviderSource(url, ttl=0.0, min_interval=60.0)
    assert len(await source.fetch()) == 1
    assert await source.fetch() == []


@pytest.mark.parametrize(
    ("body", "options", "problem"),
    [
        ("{not json", {"format": "json"}, "the answer is not JSON"),
        ('{"data": []}', {"format": "json", "json_path": "proxies"}, "no key 'proxies'"),
        ('{"data": 3}', {"format": "json", "json_path": "data"}, "expected a JSON list at 'data', got int"),
        (b"\xff\xfe", {}, "the answer is not UTF-8 text"),
    ],
)
async def test_provider_bad_answers(origin: Origin, body: str, options: dict[str, str], problem: str) -> None:
    url = origin.route("/list", body)
    with pytest.raises(ProviderError, match=problem) as caught:
        await ProviderSource(url + "?key=s3cret", **options).fetch()  # type: ignore[arg-type]
    assert isinstance(caught.value, ProxyPoolError)
    assert caught.value.source == f"http://127.0.0.1:{origin.port}/list?key=***"
    assert "s3cret" not in str(caught.value)


async def test_provider_timeout(origin: Origin) -> None:
    url = origin.route("/slow", "10.0.0.1:8080\n", delay=1.0)
    with pytest.raises(ProviderError, match=r"no answer within 0.2 s"):
        await ProviderSource(url, timeout=0.2).fetch()


async def test_provider_connection_refused_names_it_without_credentials() -> None:
    with anyio.fail_after(5):
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        await listener.aclose()
    source = ProviderSource(f"http://key:s3cret@127.0.0.1:{port}/list?token=abc")
    with pytest.raises(ProviderError) as caught:
        await source.fetch()
    message = str(caught.value)
    assert message == f"proxy source 'http://127.0.0.1:{port}/list?token=***': request failed: ConnectError"
    assert "s3cret" not in repr(source) and "abc" not in repr(source)


async def test_provider_uses_a_given_client(origin: Origin) -> None:
    url = origin.route("/list", "10.0.0.1:8080\n")
    async with httpx.AsyncClient() as client:
        source = ProviderSource(url, client=client, name="acme")
        proxies = await source.fetch()
        assert not client.is_closed
    assert [p.source for p in proxies] == ["acme"]


def test_provider_rejects_unknown_fields() -> None:
    with pytest.raises(ValueError, match="unknown fields"):
        ProviderSource("http://127.0.0.1:9/", fields={"ip": "host"})


# ------------------------------------------------------------------------------------------ tunnel


async def test_tunnel_sessions_differ_by_session_id() -> None:
    source = TunnelSource(
        "http://cust:pw@gw.example.net:7777",
        sessions=3,
        session_format="customer-{username}-sessid-{session}",
        tier=2,
    )
    proxies = await source.fetch()
    assert [p.username for p in proxies] == [f"customer-cust-sessid-{i}" for i in range(3)]
    assert [p.session for p in proxies] == ["0", "1", "2"]
    assert len({p.id for p in proxies}) == 3
    assert {(p.host, p.port, p.password, p.tier, p.source) for p in proxies} == {
        ("gw.example.net", 7777, "pw", 2, "tunnel")
    }


async def test_tunnel_without_sessions_is_the_gateway() -> None:
    [proxy] = await TunnelSource("http://cust:pw@gw.example.net:7777").fetch()
    assert proxy.username == "cust" and proxy.session is None


@pytest.mark.parametrize("session_format", ["{username}", "{username}-{zone}-{session}"])
def test_tunnel_rejects_a_bad_session_format(session_format: str) -> None:
    with pytest.raises(ValueError, match="session_format"):
        TunnelSource("http://c:pw@gw:1", sessions=2, session_format=session_format)


async def test_provider_logs_no_secrets(origin: Origin, caplog: pytest.LogCaptureFixture) -> None:
    url = origin.route("/list", "10.0.0.1:8080\nhttp://bob:hunter2@10.0.0.2:3128/x\n")
    with caplog.at_level(logging.DEBUG, logger="mocra_proxy"):
        proxies = await ProviderSource(url + "?key=apikey123").fetch()
    assert ids(proxies) == ["http://10.0.0.1:8080"]
    records = [r for r in caplog.records if r.name.startswith("mocra_proxy")]
    assert [r.levelname for r in records] == ["WARNING", "DEBUG"]
    assert "list?key=***:2: skipped" in records[0].getMessage()
    assert "hunter2" not in caplog.text and "apikey123" not in caplog.text
