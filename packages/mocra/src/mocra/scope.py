"""Crawl scope, URL rules and link extraction (re-exported from `mocra_core.scope`).

Example:
    >>> from mocra.scope import Allow, Deny, UrlRules
    >>> rules = UrlRules(Allow("**/catalogue/special-*"), Deny("**/catalogue/**"))
    >>> rules.allows("https://shop.example/catalogue/special-1"), rules.allows("https://shop.example/catalogue/2")
    (True, False)
"""

from __future__ import annotations

from mocra_core.scope import (
    IGNORED_EXTENSIONS,
    Allow,
    Deny,
    Link,
    LinkExtractor,
    Scope,
    ScopeStrategy,
    UrlRules,
)

__all__ = (
    "IGNORED_EXTENSIONS",
    "Allow",
    "Deny",
    "Link",
    "LinkExtractor",
    "Scope",
    "ScopeStrategy",
    "UrlRules",
)
