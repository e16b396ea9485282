"""`Scope`: whether a URL is inside a crawl's scope, relative to the page it was found on."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal, get_args

from .._errors import ConfigError
from ._host import DomainSet, origin_of, registrable_domain

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ("Scope", "ScopeStrategy")

ScopeStrategy = Literal["all", "same-hostname", "same-domain", "same-origin"]
_STRATEGIES: tuple[str, ...] = get_args(ScopeStrategy)
_WEB = frozenset(("http", "https"))
_AUTHORITY = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^/?#\\]*").match


class Scope:
    """Decides whether a URL may be crawled: a strategy relative to an origin, and/or allowed domains.

    Strategies compare the URL with `origin`, the URL of the request it descends from:

    - `all`: any http(s) URL.
    - `same-hostname`: the same host (`www.example.com` is not `example.com`); scheme and port may differ.
    - `same-domain`: the same registrable domain by the Public Suffix List (`shop.example.co.uk` and
      `example.co.uk` agree, `other.co.uk` does not; `alice.github.io` is not `bob.github.io`); an IP
      address or a bare name such as `localhost` is its own domain.
    - `same-origin`: the same scheme, host and port.

    Every strategy is an equivalence, so checking each follow against the page it was found on (the response's
    final URL) and each redirect hop against its request's URL keeps a whole crawl within its seeds' sites
    without carrying the seeds: a seed is its own origin (`origin=None` skips the strategy, so a seed's own
    redirect, `http://example.com` to `https://www.example.com`, defines its site). `allowed_domains`
    (subdomains included, Scrapy's rule) is checked as well when given; a `Scope` with `allowed_domains` and
    no strategy uses `all`, one with neither uses `same-domain`. Hosts are compared canonically (case, IDNA,
    trailing dot, default ports). Answers are cached per host, so the check costs a dict lookup or two per
    link.

    Args:
        strategy: How a URL must relate to its origin; see above.
        allowed_domains: Domains a URL's host must be, or be under.

    Raises:
        ConfigError: an unknown strategy, or an allowed domain with a scheme, path or port.

    Example:
        >>> scope = Scope("same-domain")
        >>> scope.allows("https://shop.example.co.uk/a", origin="http://example.co.uk/")
        True
        >>> scope.allows("https://other.co.uk/", origin="http://example.co.uk/")
        False
        >>> Scope(allowed_domains=["example.com"]).allows("https://www.example.com/x")
        True
    """

    __slots__ = ("_domains", "_keys", "allowed_domains", "strategy")

    def __init__(self, strategy: ScopeStrategy | None = None, *, allowed_domains: Iterable[str] = ()) -> None:
        domains = DomainSet(allowed_domains)
        if strategy is None:
            strategy = "all" if domains else "same-domain"
        elif strategy not in _STRATEGIES:
            raise ConfigError(
                "scope", f"unknown strategy {strategy!r}; expected one of {', '.join(_STRATEGIES)}"
            )
        self.strategy: ScopeStrategy = strategy
        self.allowed_domains: frozenset[str] = domains.domains
        self._domains = domains
        self._keys: dict[str, object] = {}

    def __repr__(self) -> str:
        domains = f", allowed_domains={sorted(self.allowed_domains)!r}" if self.allowed_domains else ""
        return f"Scope({self.strategy!r}{domains})"

    def _key(self, url: str) -> object:
        """The strategy's key of `url` (`None`: no host, or not http(s)), cached per scheme and authority."""
        match = _AUTHORITY(url)
        if match is None:
            return None
        authority = match.group(0)
        try:
            return self._keys[authority]
        except KeyError:
            pass
        origin = origin_of(authority)
        key: object
        if origin is None or origin.scheme not in _WEB:
            key = None
        elif self.strategy == "same-hostname":
            key = origin.host
        elif self.strategy == "same-domain":
            key = registrable_domain(origin.host)
        else:
            key = origin
        if len(self._keys) >= 20_000:
            self._keys.clear()
        self._keys[authority] = key
        return key

    def admits_everything(self, origin: str | None = None) -> bool:
        """True if every http(s) URL is in scope from `origin` (no allowed domains, and `all` or a seed).

        Example:
            >>> Scope("all").admits_everything(), Scope("same-domain").admits_everything("https://a.test/")
            (True, False)
        """
        return not self._domains and (origin is None or self.strategy == "all")

    def allows(self, url: str, *, origin: str | None = None) -> bool:
        """True if `url` is in scope for a request that descends from `origin`.

        Args:
            url: The absolute URL to check (a follow, a redirect target, a seed).
            origin: The URL of the request `url` was found from or redirected from; `None` for a seed,
                which is then checked against `allowed_domains` only.

        Returns:
            False for a URL outside the scope, a URL that is not http(s), or one without a host; an
            `origin` without a host admits nothing under a relative strategy.

        Example:
            >>> scope = Scope("same-hostname")
            >>> scope.allows("http://localhost:8081/b", origin="http://LOCALHOST.:8080/a")
            True
            >>> scope.allows("http://127.0.0.1:8080/b", origin="http://localhost:8080/a")
            False
            >>> Scope("same-origin").allows("https://example.com/", origin="http://example.com/")
            False
        """
        if origin is None or self.strategy == "all":
            target = origin_of(url)
            if target is None or target.scheme not in _WEB:
                return False
            return not self._domains or self._domains.contains(target.host)
        key = self._key(url)
        if key is None or key != self._key(origin):
            return False
        if self._domains:
            target = origin_of(url)
            return target is not None and self._domains.contains(target.host)
        return True
