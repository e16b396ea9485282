"""Crawl scope, URL rules and link extraction: which URLs a crawl may follow.

`Scope` decides whether a URL is inside a crawl (a strategy relative to the request it descends from,
and/or allowed domains); `UrlRules` are ordered `Allow`/`Deny` globs or regexes, first match wins;
`LinkExtractor` returns a response's `Link`s filtered by region, rules, domains and extensions.
"""

from __future__ import annotations

from ._extensions import IGNORED_EXTENSIONS
from ._host import DomainSet, Origin, canonical_host, origin_of, registrable_domain
from ._links import Link, LinkExtractor
from ._rules import Allow, Deny, UrlRules, compile_glob
from ._scope import Scope, ScopeStrategy

__all__ = (
    "IGNORED_EXTENSIONS",
    "Allow",
    "Deny",
    "DomainSet",
    "Link",
    "LinkExtractor",
    "Origin",
    "Scope",
    "ScopeStrategy",
    "UrlRules",
    "canonical_host",
    "compile_glob",
    "origin_of",
    "registrable_domain",
)

for _name in __all__:
    _obj = globals()[_name]
    if getattr(_obj, "__module__", "").startswith(__name__ + "."):
        _obj.__module__ = __name__
del _name, _obj
