"""Typed configuration of the four sources (a tagged union on `type`); each `build()`s its source."""

from __future__ import annotations

from typing import Literal

import msgspec

from ._file import FileSource
from ._provider import ProviderSource, redact_url
from ._provider_body import FIELDS
from ._proxy import Proxy, _redact_text
from ._static import StaticSource
from ._tunnel import TunnelSource

__all__ = (
    "FileSourceConfig",
    "ProviderSourceConfig",
    "SourceConfig",
    "StaticSourceConfig",
    "TunnelSourceConfig",
)


class StaticSourceConfig(
    msgspec.Struct, tag="static", tag_field="type", forbid_unknown_fields=True, frozen=True, kw_only=True
):
    """`type = "static"`: a fixed list of proxy URLs (checked when the config is read)."""

    urls: tuple[str, ...]
    tier: int = 0
    name: str = "static"
    weight: float = 1.0

    def __post_init__(self) -> None:
        for url in self.urls:
            Proxy.parse(url)  # BadProxy is a ValueError: msgspec names the key path

    def build(self) -> StaticSource:
        """The `StaticSource` this describes."""
        return StaticSource(self.urls, tier=self.tier, name=self.name, weight=self.weight)

    def __repr__(self) -> str:
        urls = tuple(_redact_text(url) for url in self.urls)
        return f"StaticSourceConfig(urls={urls!r}, tier={self.tier}, name={self.name!r})"


class FileSourceConfig(
    msgspec.Struct, tag="file", tag_field="type", forbid_unknown_fields=True, frozen=True, kw_only=True
):
    """`type = "file"`: one proxy a line; a relative `path` in a TOML file is relative to that file."""

    path: str
    tier: int = 0
    name: str | None = None
    weight: float = 1.0

    def build(self) -> FileSource:
        """The `FileSource` this describes."""
        return FileSource(self.path, tier=self.tier, name=self.name, weight=self.weight)


class ProviderSourceConfig(
    msgspec.Struct, tag="provider", tag_field="type", forbid_unknown_fields=True, frozen=True, kw_only=True
):
    """`type = "provider"`: an HTTP endpoint answering text or JSON (see `ProviderSource`)."""

    url: str
    format: Literal["text", "json"] = "text"
    json_path: str | None = None
    fields: dict[str, str] | None = None
    weight: float = 1.0
    min_interval: float = 60.0
    timeout: float = 10.0
    tier: int = 0
    name: str | None = None
    ttl: float | None = None

    def __post_init__(self) -> None:
        unknown = set(self.fields or ()) - set(FIELDS)
        if unknown:
            raise ValueError(f"unknown fields {sorted(unknown)}; expected some of {sorted(FIELDS)}")

    def build(self) -> ProviderSource:
        """The `ProviderSource` this describes."""
        return ProviderSource(
            self.url,
            format=self.format,
            json_path=self.json_path,
            fields=self.fields,
            weight=self.weight,
            min_interval=self.min_interval,
            timeout=self.timeout,
            tier=self.tier,
            name=self.name,
            ttl=self.ttl,
        )

    def __repr__(self) -> str:
        return f"ProviderSourceConfig(url={redact_url(self.url)!r}, format={self.format!r}, tier={self.tier})"


class TunnelSourceConfig(
    msgspec.Struct, tag="tunnel", tag_field="type", forbid_unknown_fields=True, frozen=True, kw_only=True
):
    """`type = "tunnel"`: a rotating gateway with `sessions` sticky sessions (see `TunnelSource`)."""

    gateway: str
    sessions: int = 0
    session_format: str = "{username}-session-{session}"
    session_prefix: str = ""
    tier: int = 0
    name: str = "tunnel"
    weight: float = 1.0

    def __post_init__(self) -> None:
        self.build()  # a bad gateway or session format is a ValueError: msgspec names the key path

    def build(self) -> TunnelSource:
        """The `TunnelSource` this describes."""
        return TunnelSource(
            self.gateway,
            sessions=self.sessions,
            session_format=self.session_format,
            session_prefix=self.session_prefix,
            tier=self.tier,
            name=self.name,
            weight=self.weight,
        )

    def __repr__(self) -> str:
        return (
            f"TunnelSourceConfig(gateway={_redact_text(self.gateway)!r}, sessions={self.sessions}, "
            f"tier={self.tier})"
        )


SourceConfig = StaticSourceConfig | FileSourceConfig | ProviderSourceConfig | TunnelSourceConfig
