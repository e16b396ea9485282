"""`check_scheme`: a settings URL's scheme checked against the ones a setting accepts."""

from __future__ import annotations

__all__ = ("check_scheme",)


def check_scheme(name: str, url: str, schemes: tuple[str, ...], *, example: str) -> None:
    """Raise `ValueError` naming `name` when `url` has no scheme or one outside `schemes`."""
    scheme, sep, _ = url.partition("://")
    if not sep:
        raise ValueError(f"{name}: expected scheme://…, e.g. {example}, got {url!r}")
    if scheme not in schemes:
        known = [s for s in schemes if s != "rediss"]  # `rediss` is `redis` over TLS
        expected = f"{', '.join(known[:-1])} or {known[-1]}" if len(known) > 1 else known[0]
        raise ValueError(f"{name}: unknown scheme {scheme!r}; expected {expected}")
