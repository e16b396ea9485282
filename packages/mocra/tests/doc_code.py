"""What the tests of the docs pages share: running a page's python blocks, and a sink that keeps items."""

from __future__ import annotations

import pathlib
import re
from collections.abc import Sequence
from typing import Any

__all__ = ("Collect", "block_namespaces", "page_namespace")

_PYTHON = re.compile(r"```python\n(.*?)```", flags=re.S)


def _name(page: pathlib.Path) -> str:
    return f"docs_{page.stem.replace('-', '_')}"


def block_namespaces(page: pathlib.Path) -> list[dict[str, Any]]:
    """Each python block of `page` run in a namespace of its own, in page order."""
    found = []
    for code in _PYTHON.findall(page.read_text()):
        namespace: dict[str, Any] = {"__name__": _name(page)}
        exec(compile(code, str(page), "exec"), namespace)
        found.append(namespace)
    return found


def page_namespace(page: pathlib.Path, namespace: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every python block of `page` run in order in one namespace (later blocks use earlier names)."""
    namespace = namespace if namespace is not None else {"__name__": _name(page)}
    for code in _PYTHON.findall(page.read_text()):
        exec(compile(code, str(page), "exec"), namespace)
    return namespace


class Collect:
    """A sink keeping every item it is given, in order."""

    def __init__(self) -> None:
        self.items: list[Any] = []

    async def open(self) -> None: ...

    async def write(self, batch: Sequence[Any]) -> None:
        self.items.extend(batch)

    async def close(self) -> None: ...
