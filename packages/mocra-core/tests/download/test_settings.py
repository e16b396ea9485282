"""DownloadSettings validation and decoding."""

from __future__ import annotations

import msgspec
import pytest

from mocra_core.download import DEFAULT_HEADERS, DownloadSettings, build_downloader


def test_defaults() -> None:
    settings = DownloadSettings()
    assert settings.user_agent.startswith("mocra/") and "http" not in settings.user_agent
    assert (settings.connect_timeout, settings.read_timeout, settings.total_timeout) == (10.0, 30.0, 60.0)
    assert (settings.max_body_bytes, settings.max_redirects, settings.max_connections) == (10 << 20, 10, 100)
    assert (settings.transport, settings.verify, settings.headers) == ("aiohttp", True, DEFAULT_HEADERS)
    assert settings.headers is not DEFAULT_HEADERS


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"connect_timeout": 0}, "connect_timeout"),
        ({"read_timeout": -1.0}, "read_timeout"),
        ({"total_timeout": float("nan")}, "total_timeout"),
        ({"max_body_bytes": 0}, "max_body_bytes"),
        ({"max_redirects": -1}, "max_redirects"),
        ({"max_connections": 0}, "max_connections"),
        ({"user_agent": " "}, "user_agent"),
        ({"transport": "curl"}, "transport"),
    ],
)
def test_nonsense_is_rejected_naming_the_field(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        DownloadSettings(**kwargs)  # type: ignore[arg-type]


def test_decoded_from_config_with_typos_refused() -> None:
    settings = msgspec.convert({"read_timeout": 5, "transport": "httpx"}, DownloadSettings)
    assert (settings.read_timeout, settings.transport) == (5.0, "httpx")
    assert msgspec.convert({"transport": "httpx-aiohttp"}, DownloadSettings).transport == "httpx-aiohttp"
    with pytest.raises(msgspec.ValidationError, match="read_timout"):
        msgspec.convert({"read_timout": 5}, DownloadSettings)
    with pytest.raises(msgspec.ValidationError, match="connect_timeout"):
        msgspec.convert({"connect_timeout": -2}, DownloadSettings)


@pytest.mark.parametrize(
    ("transport", "made"),
    [("aiohttp", "AiohttpDownloader"), ("httpx-aiohttp", "HttpxDownloader"), ("httpx", "HttpxDownloader")],
)
def test_the_transport_picks_the_built_in_downloader(transport: str, made: str) -> None:
    downloader = build_downloader(DownloadSettings(transport=transport), name="x")  # type: ignore[arg-type]
    assert (type(downloader).__name__, downloader.name) == (made, "x")
    assert type(build_downloader()).__name__ == "AiohttpDownloader"  # the default
