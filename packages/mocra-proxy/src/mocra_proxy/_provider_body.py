"""Turning a provider's answer (plain text or JSON) into proxies."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import msgspec

from ._lines import parse_lines
from ._proxy import SCHEMES, BadProxy, Proxy
from ._source_errors import ProviderError

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ("FIELDS", "parse_json", "parse_text")

logger = logging.getLogger(__name__)

FIELDS: Mapping[str, str] = {
    "url": "url",
    "scheme": "scheme",
    "host": "host",
    "port": "port",
    "username": "username",
    "password": "password",
    "expires": "expires",
}
"""Our field → the provider's key, for JSON objects; `ProviderSource(fields=...)` overrides some."""


def parse_text(body: bytes, *, name: str, tier: int, expires_at: float | None) -> list[Proxy]:
    """One proxy a line (as in a file)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise ProviderError(name, "the answer is not UTF-8 text") from None
    return parse_lines(text, where=name, tier=tier, source=name, expires_at=expires_at)


def parse_json(
    body: bytes,
    *,
    name: str,
    tier: int,
    expires_at: float | None,
    json_path: str | None,
    fields: Mapping[str, str],
) -> list[Proxy]:
    """A JSON list (at `json_path`, dot-separated keys) of proxy strings or objects."""
    try:
        data: Any = msgspec.json.decode(body)
    except msgspec.DecodeError as exc:
        raise ProviderError(name, f"the answer is not JSON ({exc})") from None
    for key in json_path.split(".") if json_path else ():
        if not isinstance(data, dict) or key not in data:
            raise ProviderError(name, f"no key {key!r} on the JSON path {json_path!r}")
        data = data[key]
    if not isinstance(data, list):
        where = f"at {json_path!r}" if json_path else "at the top"
        raise ProviderError(name, f"expected a JSON list {where}, got {type(data).__name__}")
    proxies: list[Proxy] = []
    for index, item in enumerate(data):
        try:
            proxies.append(_item(item, name=name, tier=tier, expires_at=expires_at, fields=fields))
        except BadProxy as exc:
            logger.warning("%s: item %d skipped: %s", name, index, exc)
    return proxies


def _item(
    item: object, *, name: str, tier: int, expires_at: float | None, fields: Mapping[str, str]
) -> Proxy:
    if isinstance(item, str):
        return Proxy.parse(item, tier=tier, source=name, expires_at=expires_at)
    if not isinstance(item, dict):
        raise BadProxy(f"expected a string or an object, got {type(item).__name__}")
    expires = item.get(fields["expires"])
    if expires is not None:
        expires_at = _expiry(expires)
    url = item.get(fields["url"])
    if isinstance(url, str):
        return Proxy.parse(url, tier=tier, source=name, expires_at=expires_at)
    host, port = item.get(fields["host"]), item.get(fields["port"])
    if not isinstance(host, str) or not host or not isinstance(port, int | str):
        raise BadProxy(f"an object needs {fields['url']!r} or {fields['host']!r} and {fields['port']!r}")
    scheme = str(item.get(fields["scheme"]) or "http").lower()
    if scheme not in SCHEMES:
        raise BadProxy(f"scheme must be one of {', '.join(SCHEMES)}, got {scheme!r}")
    try:
        number = int(port)
    except ValueError:
        raise BadProxy(f"port {port!r} is not a number") from None
    if not 0 < number < 65536:
        raise BadProxy(f"port {number} is out of range")
    return Proxy(
        scheme=scheme,
        host=host,
        port=number,
        username=str(item.get(fields["username"]) or ""),
        password=str(item.get(fields["password"]) or ""),
        tier=tier,
        source=name,
        expires_at=expires_at,
    )


def _expiry(value: object) -> float:
    """Unix seconds from a number or an ISO 8601 string (UTC when it names no zone)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            raise BadProxy(f"expiry {value!r} is neither Unix seconds nor ISO 8601") from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.timestamp()
    raise BadProxy(f"expiry {value!r} is neither Unix seconds nor ISO 8601")
