"""Canonical hosts and origins of URLs, registrable domains and domain sets; each cached per host.

A host is compared in one canonical form: lower case, internationalised labels in IDNA (punycode), no
trailing dot, IPv6 literals in brackets; a port equal to its scheme's default is dropped. The registrable
domain ("eTLD+1") comes from the Public Suffix List bundled with `publicsuffixlist` (ICANN and private
sections, so `alice.github.io` and `bob.github.io` are different sites); nothing is fetched at run time,
and the list is loaded on first use (about 50 ms), only by scopes that need it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NamedTuple

from .._errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Iterable

    from publicsuffixlist import PublicSuffixList

__all__ = ("DomainSet", "Origin", "canonical_host", "origin_of", "registrable_domain")

_AUTHORITY = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*)://([^/?#\\]*)").match
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21}
_IPV4 = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}\Z").match
_CACHE_LIMIT = 20_000  # distinct authorities remembered; past it the cache starts again
_psl: PublicSuffixList | None = None


class Origin(NamedTuple):
    """The canonical scheme, host and port of a URL (`port` is `None` for the scheme's default)."""

    scheme: str
    host: str
    port: int | None


_origins: dict[str, Origin | None] = {}


def _canonical_hostname(host: str) -> str:
    host = host.lower().rstrip(".") if host.isascii() else host.rstrip(".")
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii").lower()  # IDNA 2003, as http/_url.py
        except UnicodeError:
            host = host.lower()
    return host


def _parse_authority(scheme: str, authority: str) -> Origin | None:
    hostport = authority.rpartition("@")[2]
    if hostport.startswith("["):
        end = hostport.find("]")
        if end < 0:
            return None
        host, port_text = hostport[: end + 1].lower(), hostport[end + 2 :]
    else:
        host, _, port_text = hostport.partition(":")
        host = _canonical_hostname(host)
    if not host:
        return None
    port: int | None = None
    if port_text:
        if not (port_text.isascii() and port_text.isdigit()):
            return None
        port = int(port_text)
    if port == _DEFAULT_PORTS.get(scheme):
        port = None
    return Origin(scheme, host, port)


def origin_of(url: str) -> Origin | None:
    """The canonical `Origin` of an absolute URL, or `None` when it has no host (`mailto:`, relative).

    Example:
        >>> origin_of("HTTPS://Bücher.DE.:443/a?b")
        Origin(scheme='https', host='xn--bcher-kva.de', port=None)
        >>> origin_of("http://user@[::1]:8080/"), origin_of("/relative")
        (Origin(scheme='http', host='[::1]', port=8080), None)
    """
    match = _AUTHORITY(url)
    if match is None:
        return None
    key = match.group(0)
    try:
        return _origins[key]
    except KeyError:
        pass
    if len(_origins) >= _CACHE_LIMIT:
        _origins.clear()
    scheme, authority = match.groups()
    origin = _origins[key] = _parse_authority(scheme.lower(), authority)
    return origin


def canonical_host(url: str) -> str | None:
    """The canonical host of an absolute URL (for stats and comparisons), or `None` without one.

    Example:
        >>> canonical_host("http://WWW.Example.com.:8080/x")
        'www.example.com'
    """
    origin = origin_of(url)
    return origin.host if origin is not None else None


def _load_psl() -> PublicSuffixList:
    global _psl
    if _psl is None:
        from publicsuffixlist import PublicSuffixList

        _psl = PublicSuffixList()
    return _psl


_domains: dict[str, str] = {}


def registrable_domain(host: str) -> str:
    """The registrable domain (eTLD+1) of a canonical host; an IP address or a public suffix is its own.

    Example:
        >>> [registrable_domain(h) for h in ("a.b.example.co.uk", "example.co.uk", "co.uk", "localhost")]
        ['example.co.uk', 'example.co.uk', 'co.uk', 'localhost']
        >>> registrable_domain("127.0.0.1"), registrable_domain("alice.github.io")
        ('127.0.0.1', 'alice.github.io')
    """
    try:
        return _domains[host]
    except KeyError:
        pass
    if host.startswith("[") or _IPV4(host):
        domain = host
    else:
        domain = _load_psl().privatesuffix(host) or host
    if len(_domains) >= _CACHE_LIMIT:
        _domains.clear()
    _domains[host] = domain
    return domain


def _check_domain(key: str, domain: str) -> str:
    if not isinstance(domain, str):
        raise ConfigError(key, f"expected a domain name, got {domain!r}")
    if "://" in domain or "/" in domain:
        raise ConfigError(key, f"{domain!r} is a URL, not a domain: write the host alone, e.g. 'example.com'")
    if ":" in domain and not domain.startswith("["):
        raise ConfigError(key, f"{domain!r} has a port: a domain matches every port, write it without one")
    host = _canonical_hostname(domain.strip().lstrip("."))
    if not host or any(c in host for c in " @?#"):
        raise ConfigError(key, f"{domain!r} is not a domain name")
    return host


class DomainSet:
    """A set of domains, each matching itself and its subdomains (Scrapy's `allowed_domains` rule).

    Entries are canonicalised like hosts (case, IDNA, trailing dot); a leading dot is ignored. An entry
    with a scheme, a path or a port raises `ConfigError` naming it. Answers are cached per host.

    Args:
        domains: Domain names such as `"example.com"` or `"bücher.de"`.
        key: The setting the domains came from, named in errors.

    Raises:
        ConfigError: an entry is a URL, has a port or is empty.

    Example:
        >>> domains = DomainSet(["Example.com", "bücher.de"])
        >>> [domains.contains(h) for h in ("example.com", "shop.example.com", "badexample.com")]
        [True, True, False]
        >>> domains.contains("xn--bcher-kva.de")
        True
        >>> from mocra_core import ConfigError
        >>> try:
        ...     DomainSet(["example.com:8080"], key="scope.allowed_domains")
        ... except ConfigError as exc:
        ...     print(exc)  # doctest: +ELLIPSIS
        <code>: scope.allowed_domains: 'example.com:8080' has a port: a domain matches every port, ...
    """

    __slots__ = ("_cache", "domains")

    def __init__(self, domains: Iterable[str], *, key: str = "allowed_domains") -> None:
        if isinstance(domains, str):
            raise ConfigError(key, f"expected a list of domains, got the string {domains!r}")
        self.domains: frozenset[str] = frozenset(_check_domain(key, d) for d in domains)
        self._cache: dict[str, bool] = {}

    def __bool__(self) -> bool:
        return bool(self.domains)

    def __repr__(self) -> str:
        return f"DomainSet({sorted(self.domains)!r})"

    def contains(self, host: str) -> bool:
        """True if the canonical `host` is one of the domains or a subdomain of one."""
        try:
            return self._cache[host]
        except KeyError:
            pass
        found = host in self.domains
        if not found and not host.startswith("["):
            dot = host.find(".")
            while dot >= 0 and not found:
                found = host[dot + 1 :] in self.domains
                dot = host.find(".", dot + 1)
        if len(self._cache) >= _CACHE_LIMIT:
            self._cache.clear()
        self._cache[host] = found
        return found
