"""`UrlRules`: ordered allow/deny rules over URLs, globs or regular expressions, first match wins."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ("Allow", "Deny", "UrlRules", "compile_glob")

_GLOB_TOKEN = re.compile(r"\*\*|\*")


def compile_glob(glob: str) -> re.Pattern[str]:
    """Compile a URL glob: `**` matches anything, `*` anything but `/`, every other character itself.

    The whole URL must match. `?`, `[` and `]` are literal (they are common in URLs); use a regular
    expression for more.

    Example:
        >>> pattern = compile_glob("https://*.example.com/products/*")
        >>> [bool(pattern.fullmatch(u)) for u in (
        ...     "https://shop.example.com/products/42",
        ...     "https://shop.example.com/products/42/reviews",
        ...     "https://example.com/products/42")]
        [True, False, False]
        >>> bool(compile_glob("https://example.com/**?page=*").fullmatch("https://example.com/a/b?page=2"))
        True
    """
    parts: list[str] = []
    last = 0
    for match in _GLOB_TOKEN.finditer(glob):
        parts.append(re.escape(glob[last : match.start()]))
        parts.append(".*" if match.group() == "**" else "[^/]*")
        last = match.end()
    parts.append(re.escape(glob[last:]))
    return re.compile("".join(parts), re.DOTALL)


class _Rule:
    __slots__ = ("_match", "pattern")
    allows: bool = True

    def __init__(self, pattern: str | re.Pattern[str]) -> None:
        self.pattern = pattern
        self._match: Callable[[str], re.Match[str] | None]
        if isinstance(pattern, re.Pattern):
            self._match = pattern.search
        elif isinstance(pattern, str):
            self._match = compile_glob(pattern).fullmatch
        else:
            raise TypeError(f"a rule's pattern is a glob str or a compiled re.Pattern, got {pattern!r}")

    def matches(self, url: str) -> bool:
        """True if the rule's pattern matches `url` (a glob the whole URL, a regex anywhere in it)."""
        return self._match(url) is not None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.pattern!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Rule) and type(other) is type(self) and other.pattern == self.pattern

    def __hash__(self) -> int:
        return hash((type(self), self.pattern))


class Allow(_Rule):
    """Allow the URLs a pattern matches: a glob `str` (see `compile_glob`) or a compiled regex (`search`)."""

    __slots__ = ()
    allows = True


class Deny(_Rule):
    """Deny the URLs a pattern matches: a glob `str` (see `compile_glob`) or a compiled regex (`search`)."""

    __slots__ = ()
    allows = False


class UrlRules:
    r"""Ordered allow/deny rules: the first rule that matches a URL decides it.

    A glob (`str`) must match the whole URL (`**` anything, `*` anything but `/`); a regex
    (`re.compile(...)`) may match anywhere in it (`re.search`, Scrapy's LinkExtractor rule), so anchor
    it with `^`/`$` when needed. Rules see the URL as given: the link extractor hands them absolute URLs
    without fragments (canonical ones when it canonicalises).

    When no rule matches, `default` decides; left as `None` it follows Scrapy's LinkExtractor: a URL is
    denied if there is any `Allow` rule (allow-listing) and allowed otherwise (only `Deny` rules, or none).
    To get Scrapy's "deny beats allow" from two lists, put the `Deny` rules first.

    Args:
        rules: `Allow` and `Deny` rules, in the order they are tried.
        default: What a URL no rule matches gets; `None` as described above.

    Example:
        >>> import re
        >>> rules = UrlRules(
        ...     Deny("**/private/**"),
        ...     Allow("https://example.com/**"),
        ...     Deny(re.compile(r"[?&]sort=")),
        ... )
        >>> rules.allows("https://example.com/a?sort=asc")   # Allow comes first
        True
        >>> rules.allows("https://example.com/x/private/y"), rules.allows("https://other.org/")
        (False, False)
        >>> UrlRules(Deny(re.compile(r"\.php$"))).allows("https://other.org/")  # only denies: allowed
        True
    """

    __slots__ = ("default", "rules")

    def __init__(self, *rules: Allow | Deny, default: bool | None = None) -> None:
        for rule in rules:
            if not isinstance(rule, _Rule):
                raise TypeError(f"expected Allow(...) or Deny(...), got {rule!r}")
        self.rules: tuple[Allow | Deny, ...] = rules
        self.default: bool = default if default is not None else not any(r.allows for r in rules)

    def allows(self, url: str) -> bool:
        """True if the first rule matching `url` is an `Allow`, or no rule matches and `default` is True."""
        for rule in self.rules:
            if rule._match(url) is not None:
                return rule.allows
        return self.default

    def __repr__(self) -> str:
        inner = ", ".join(map(repr, self.rules))
        return f"UrlRules({inner}, default={self.default})" if inner else f"UrlRules(default={self.default})"
