"""`Proxy`: one proxy endpoint, its credentials (never shown) and where it came from."""

from __future__ import annotations

import re
from typing import Literal
from urllib.parse import quote, unquote, urlsplit

import msgspec

from ._errors import ProxyPoolError

__all__ = ("SCHEMES", "BadProxy", "Proxy", "Scheme")

Scheme = Literal["http", "https", "socks5", "socks5h"]
SCHEMES: tuple[Scheme, ...] = ("http", "https", "socks5", "socks5h")
_SHORT = re.compile(r"^(?P<host>[^:\s/]+):(?P<port>\d+)(?::(?P<user>[^:\s]*):(?P<password>\S*))?$")


class BadProxy(ProxyPoolError, ValueError):
    """A proxy address that cannot be used; the message names it (credentials redacted)."""


class Proxy(msgspec.Struct, frozen=True, kw_only=True):
    """One proxy: where it is, how to log in, and where it came from.

    The password never appears in `repr`, `str`, logs or errors: use `redacted` to show a proxy and `url`
    only to hand it to an HTTP client.

    Attributes:
        scheme: `http`, `https`, `socks5` or `socks5h` (SOCKS only where the HTTP client supports it).
        host: Host name or IP address.
        port: TCP port.
        username: User name, if the proxy wants one ("" otherwise).
        password: Password ("" otherwise); never shown.
        tier: Cost tier (0 cheapest, e.g. direct < datacenter < residential); see `TieredPolicy`.
        source: Name of the source that gave it (`static`, a file path, a provider's name).
        expires_at: Unix time after which it must not be leased (`None`: never).
        session: A tunnel's sticky session id, when the username carries one.

    Example:
        >>> p = Proxy.parse("http://alice:s3cret@10.0.0.1:8080")
        >>> p.redacted, p.url
        ('http://alice:***@10.0.0.1:8080', 'http://alice:s3cret@10.0.0.1:8080')
        >>> p
        Proxy('http://alice:***@10.0.0.1:8080')
        >>> Proxy.parse("10.0.0.2:3128:bob:pw").redacted
        'http://bob:***@10.0.0.2:3128'
    """

    scheme: Scheme = "http"
    host: str
    port: int
    username: str = ""
    password: str = ""
    tier: int = 0
    source: str = "static"
    expires_at: float | None = None
    session: str | None = None

    @classmethod
    def parse(
        cls, text: str, *, tier: int = 0, source: str = "static", expires_at: float | None = None
    ) -> Proxy:
        """Read `scheme://[user:pass@]host:port` or `host:port[:user:pass]` (then `http`).

        Raises:
            BadProxy: naming the (redacted) text and what is wrong with it.
        """
        text = text.strip()
        short = _SHORT.match(text)
        if short is not None and "://" not in text:
            return cls(
                host=short["host"],
                port=_port(short["port"], text),
                username=short["user"] or "",
                password=short["password"] or "",
                tier=tier,
                source=source,
                expires_at=expires_at,
            )
        try:
            parts = urlsplit(text)
            port = parts.port
        except ValueError as exc:
            raise BadProxy(f"proxy {_redact_text(text)!r}: {exc}") from None
        scheme = parts.scheme.lower()
        if scheme not in SCHEMES:
            raise BadProxy(
                f"proxy {_redact_text(text)!r}: scheme must be one of {', '.join(SCHEMES)}, "
                f"got {scheme or 'none'!r}"
            )
        if not parts.hostname:
            raise BadProxy(f"proxy {_redact_text(text)!r}: no host")
        if port is None:
            raise BadProxy(f"proxy {_redact_text(text)!r}: no port")
        if parts.path not in ("", "/") or parts.query or parts.fragment:
            raise BadProxy(f"proxy {_redact_text(text)!r}: a proxy address has no path, query or fragment")
        return cls(
            scheme=scheme,
            host=parts.hostname,
            port=_port(str(port), text),
            username=unquote(parts.username or ""),
            password=unquote(parts.password or ""),
            tier=tier,
            source=source,
            expires_at=expires_at,
        )

    @property
    def url(self) -> str:
        """The full URL with credentials, for an HTTP client; never log it."""
        return f"{self.scheme}://{self._auth(quote(self.password, safe=''))}{self._where}"

    @property
    def redacted(self) -> str:
        """The URL with the password replaced by `***`: safe for logs, stats and errors."""
        return f"{self.scheme}://{self._auth('***')}{self._where}"

    @property
    def id(self) -> str:
        """The proxy's identity in the pool and shared state: scheme, user, host and port (no password)."""
        user = f"{self.username}@" if self.username else ""
        return f"{self.scheme}://{user}{self._where}"

    def expired(self, now: float) -> bool:
        """True if the proxy has an expiry and `now` (Unix time) is past it."""
        return self.expires_at is not None and now >= self.expires_at

    @property
    def _where(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def _auth(self, password: str) -> str:
        if not self.username and not self.password:
            return ""
        return f"{quote(self.username, safe='')}:{password}@"

    def __repr__(self) -> str:
        return f"Proxy({self.redacted!r})"

    def __str__(self) -> str:
        return self.redacted


def _port(text: str, whole: str) -> int:
    port = int(text)
    if not 0 < port < 65536:
        raise BadProxy(f"proxy {_redact_text(whole)!r}: port {port} is out of range")
    return port


def _redact_text(text: str) -> str:
    """`text` with anything that may be a password replaced by `***` (for errors about bad input)."""
    if "://" in text:
        scheme, _, rest = text.partition("://")
        auth, at, where = rest.rpartition("@")
        if at and ":" in auth:
            return f"{scheme}://{auth.partition(':')[0]}:***@{where}"
        return text
    parts = text.split(":")
    if len(parts) >= 4:
        return ":".join([*parts[:3], "***"])
    return text
