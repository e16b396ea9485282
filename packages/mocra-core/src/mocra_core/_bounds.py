"""Range checks for the numeric fields of settings Structs, with one wording for every section.

A check raises `ValueError("<field>: <rule>, got <value>")` from the Struct's `__post_init__`; msgspec adds
the section's path and `config.convert` turns it into a `ConfigError` naming `section.field` and the source.
"""

from __future__ import annotations

__all__ = ("at_least", "positive")


def at_least(owner: object, low: int, *names: str, unset: str = "") -> None:
    """Reject a field of `owner` below `low` (and NaN); a field set to None passes.

    Args:
        owner: The Struct being checked.
        low: The smallest allowed value.
        names: The fields to check.
        unset: What leaving an optional field unset means, said in the message (e.g. "no limit").

    Example:
        >>> from types import SimpleNamespace
        >>> at_least(SimpleNamespace(max_pages=0), 1, "max_pages", unset="no limit")
        Traceback (most recent call last):
        ...
        ValueError: max_pages: must be at least 1 (leave it unset for no limit), got 0
    """
    for name in names:
        value = getattr(owner, name)
        if value is not None and not value >= low:  # `not >=` also rejects NaN
            hint = f" (leave it unset for {unset})" if unset else ""
            raise ValueError(f"{name}: must be at least {low}{hint}, got {value!r}")


def positive(owner: object, *names: str) -> None:
    """Reject a field of `owner` that is not above 0 (a duration of 0, a negative one, NaN).

    Example:
        >>> from types import SimpleNamespace
        >>> positive(SimpleNamespace(timeout=0.0), "timeout")
        Traceback (most recent call last):
        ...
        ValueError: timeout: must be > 0, got 0.0
    """
    for name in names:
        value = getattr(owner, name)
        if not value > 0:
            raise ValueError(f"{name}: must be > 0, got {value!r}")
