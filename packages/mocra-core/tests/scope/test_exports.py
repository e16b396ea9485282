"""The public surface of `mocra_core.scope` is a decision: changing it must change this test."""

from __future__ import annotations

import mocra_core.scope


def test_scope_exports() -> None:
    assert mocra_core.scope.__all__ == (
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
    assert mocra_core.scope.Scope.__module__ == "mocra_core.scope"
    assert mocra_core.scope.LinkExtractor.__module__ == "mocra_core.scope"
