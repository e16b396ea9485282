"""`load_optional` and `require_extra`: code whose modules need an extra, loaded when first used."""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING

from ._errors import MissingExtra

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ("load_optional", "require_extra")

_BACKENDS = f"{__package__}.backends."


def load_optional(package: str, lazy: Mapping[str, tuple[str, str, str]], name: str) -> object:
    """Import `name` of `package` on first use, so the package imports without the extra it needs.

    Args:
        package: The package's `__name__`.
        lazy: Name -> (module, relative to `package` or absolute; the extra; the top-level package the
            extra installs).
        name: The attribute asked for.

    Raises:
        AttributeError: `lazy` has no such name.
        MissingExtra: the extra's package is not installed (naming the extra).

    The object is kept in the package's namespace (the next lookup does not get here), and a class of
    one of the package's own modules or of a backend driver (`mocra_core.backends`) is shown as the
    package's (`mocra_core.sinks.SqlSink`, `mocra_core.queue.NatsJetStreamQueue`).

    Example:
        >>> load_optional("mocra_core.sinks", {"SqlSink": ("._sql", "sql", "sqlalchemy")}, "SqlSink")
        <class 'mocra_core.sinks.SqlSink'>
    """
    if name not in lazy:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    module, extra, driver = lazy[name]
    try:
        found: object = getattr(importlib.import_module(module, package), name)
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.partition(".")[0] != driver:
            raise
        raise MissingExtra(extra, f"{package}.{name}") from exc
    if getattr(found, "__module__", "").startswith((package + ".", _BACKENDS)):
        found.__module__ = package
    setattr(sys.modules[package], name, found)
    return found


def require_extra(package: str, extra: str, what: str) -> None:
    """Import `package` (a subsystem an extra installs), or say which extra `what` needs.

    Call it before `from <package> import ...` in the function that needs the package: the import then
    cannot fail for want of the extra, and an error inside the package is not mistaken for its absence.

    Raises:
        MissingExtra: `package` is not installed (`pip install 'mocra[<extra>]'`).

    Example:
        >>> require_extra("mocra_core", "core", "this example")
        >>> require_extra("mocra_absent", "absent", "a feature")
        Traceback (most recent call last):
        ...
        mocra_core._errors.MissingExtra: a feature needs: pip install 'mocra[absent]'
    """
    try:
        importlib.import_module(package)
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.partition(".")[0] != package:
            raise
        raise MissingExtra(extra, what) from None
