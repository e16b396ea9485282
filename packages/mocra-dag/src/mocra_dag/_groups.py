"""Unwrapping one-member exception groups at the API edge (Starlette's `collapse_excgroups`)."""

from __future__ import annotations

from typing import NoReturn

__all__ = ("raise_single",)


def raise_single(group: BaseExceptionGroup[BaseException]) -> NoReturn:
    """Raise the only exception of `group` as itself, keeping its own context; re-raise larger groups.

    Example:
        >>> try:
        ...     raise_single(ExceptionGroup("g", [KeyError("k")]))
        ... except KeyError as exc:
        ...     print(repr(exc))
        KeyError('k')
    """
    if len(group.exceptions) != 1:
        raise group
    exc = group.exceptions[0]
    if isinstance(exc, BaseExceptionGroup):
        raise_single(exc)
    context = exc.__context__
    try:
        raise exc
    finally:
        exc.__context__ = context
        del exc
