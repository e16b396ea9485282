"""What the tests of the docs pages share: running a page's python blocks, reading its shell commands, and
a sink that keeps items."""

from __future__ import annotations

import pathlib
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ("Collect", "Command", "block_namespaces", "fenced", "page_namespace", "shell_commands")

_PYTHON = re.compile(r"```python\n(.*?)```", flags=re.S)
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", flags=re.S | re.M)


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


def fenced(page: pathlib.Path, language: str) -> list[str]:
    """The text of each fenced block of `page` in `language` (`""`: blocks that name none), in page order."""
    return [code for lang, code in _FENCE.findall(page.read_text()) if lang == language]


@dataclass(frozen=True)
class Command:
    """A command of a shell block: its `VAR=value` prefixes, its words, and its trailing comment."""

    env: dict[str, str]
    argv: list[str]
    comment: str


def shell_commands(block: str) -> list[Command]:
    """The commands of a shell block: continuations joined, comment lines and `uv run` dropped.

    Words are split as the shell would (`shlex`), without expanding anything (`$(hostname)` stays as is).
    """
    found = []
    for line in block.replace("\\\n", " ").splitlines():
        code, _, comment = line.partition(" # ")
        words = shlex.split(code.strip(), comments=True)
        env: dict[str, str] = {}
        while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
            name, _, value = words.pop(0).partition("=")
            env[name] = value
        if words[:2] == ["uv", "run"]:
            words = words[2:]
        if words or env:
            found.append(Command(env, words, comment.strip()))
    return found
